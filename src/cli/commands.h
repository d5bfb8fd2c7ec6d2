// The subcommands of the scalebench program. Each returns the process exit code.
#pragma once
#include <string>
#include <vector>

#include "comm/mpi_session.h"

namespace sb {
int train_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line);
int scale_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line);
int comm_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line);
int predict_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line);
int info_command(MpiSession& session, const std::vector<std::string>& args);
int pack_command(MpiSession& session, const std::vector<std::string>& args);
int io_command(MpiSession& session, const std::vector<std::string>& args);
}  // namespace sb

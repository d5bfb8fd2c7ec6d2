// Collectives over strings of different lengths (host names, GPU models), built on the typed ones.
#pragma once
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace sb {

// Every rank's string, in rank order, on every rank.
std::vector<std::string> allgather_strings(Communicator& comm, const std::string& mine);

// Root's string on every rank.
std::string broadcast_string(Communicator& comm, const std::string& text, int root);

}  // namespace sb

// A small NVTX tool for the tests: loaded by the nvtx3 headers through NVTX_INJECTION64_PATH, it writes
// every range push and pop of the process to SB_NVTX_RECORD.<pid>, one line each:
//   push <thread> <domain> <name>
//   pop <thread> <domain>
// (domain "-" for the default domain). tests/nvtx/test_nvtx_ranges.py reads the files.
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

std::mutex g_mutex;
std::FILE* g_file = nullptr;

struct Domain {
  std::string name;
};

const char* domain_name(nvtxDomainHandle_t domain) {
  return domain ? reinterpret_cast<const Domain*>(domain)->name.c_str() : "-";
}

unsigned long long thread_number() { return static_cast<unsigned long long>(std::hash<std::thread::id>{}(std::this_thread::get_id())); }

void record(const char* what, const char* domain, const char* name) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_file) return;
  if (name) std::fprintf(g_file, "%s %llu %s %s\n", what, thread_number(), domain, name);
  else std::fprintf(g_file, "%s %llu %s\n", what, thread_number(), domain);
  std::fflush(g_file);
}

const char* message_of(const nvtxEventAttributes_t* attributes) {
  if (!attributes || attributes->messageType != NVTX_MESSAGE_TYPE_ASCII || !attributes->message.ascii) return "?";
  return attributes->message.ascii;
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name ? name : ""});
}
void NVTX_API domain_destroy(nvtxDomainHandle_t domain) { delete reinterpret_cast<Domain*>(domain); }
int NVTX_API domain_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  record("push", domain_name(domain), message_of(attributes));
  return 0;
}
int NVTX_API domain_pop(nvtxDomainHandle_t domain) {
  record("pop", domain_name(domain), nullptr);
  return 0;
}
int NVTX_API push_a(const char* name) {
  record("push", "-", name ? name : "?");
  return 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* attributes) {
  record("push", "-", message_of(attributes));
  return 0;
}
int NVTX_API pop() {
  record("pop", "-", nullptr);
  return 0;
}

bool set(const NvtxExportTableCallbacks* callbacks, NvtxCallbackModule module, unsigned id, NvtxFunctionPointer function) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(module, &table, &size) || !table || id >= size) return false;
  *table[id] = function;
  return true;
}

}  // namespace

extern "C" int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char* base = std::getenv("SB_NVTX_RECORD");
  if (!base) return 0;
  const std::string path = std::string(base) + "." + std::to_string(::getpid());
  g_file = std::fopen(path.c_str(), "w");
  if (!g_file) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks) return 0;
  const auto fn = [](auto f) { return reinterpret_cast<NvtxFunctionPointer>(f); };
  const bool ok = set(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, fn(&push_a)) &&
                  set(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, fn(&push_ex)) &&
                  set(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, fn(&pop)) &&
                  set(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, fn(&domain_create)) &&
                  set(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, fn(&domain_destroy)) &&
                  set(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, fn(&domain_push)) &&
                  set(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, fn(&domain_pop));
  return ok ? 1 : 0;
}

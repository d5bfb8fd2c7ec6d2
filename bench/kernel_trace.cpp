// A kernel timeline for nodes without Nsight Systems: a CUDA injection library (CUDA_INJECTION64_PATH)
// that records every kernel, memcpy and memset the process runs, CUDA graph nodes included, through
// CUPTI's activity API, and writes them as CSV when the process exits. bench/kernel_trace_summary.py
// turns the file into time per kernel and the GPU's idle time between kernels.
//
//   CUDA_INJECTION64_PATH=build/bench/libkernel_trace.so SCALEBENCH_KERNEL_TRACE=trace.csv scalebench train ...
//
// With mpirun each rank writes its own file: "%r" in the path becomes OMPI_COMM_WORLD_RANK (or PMI_RANK).
#include <cupti.h>
#include <cxxabi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr size_t kBufferBytes = 8u << 20;

struct Record {
  uint64_t start;
  uint64_t end;
  uint32_t stream;
  uint32_t graph;
  const char* kind;
  std::string name;
};

std::mutex records_mutex;
std::vector<Record>* records = nullptr;

void check(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::fprintf(stderr, "kernel_trace: %s failed: %s\n", what, text ? text : "unknown CUPTI error");
  std::exit(3);
}

std::string demangled(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && plain != nullptr ? plain : name;
  std::free(plain);
  // The template arguments of library kernels run to hundreds of characters; the CSV keeps 160.
  if (out.size() > 160) out.resize(160);
  for (char& c : out)
    if (c == ',' || c == '"') c = ';';
  return out;
}

// With SCALEBENCH_KERNEL_TRACE_API=1 the driver calls that allocate or free memory or wait for the device are
// recorded too (kind "api", the calling thread in the stream column): one of them in a loader thread can
// stall the training beside it.
bool waits_or_allocates(const char* name) {
  for (const char* part : {"Alloc", "Free", "Synchronize", "HostRegister", "HostUnregister"})
    if (std::strstr(name, part) != nullptr) return true;
  return false;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;

}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid_bytes) {
  CUpti_Activity* activity = nullptr;
  std::lock_guard<std::mutex> lock(records_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid_bytes, &activity) == CUPTI_SUCCESS) {
    switch (activity->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(activity);
        records->push_back({k->start, k->end, k->streamId, k->graphId, "kernel", demangled(k->name)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(activity);
        records->push_back({m->start, m->end, m->streamId, m->graphId, "memcpy", std::to_string(m->bytes) + " bytes"});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(activity);
        records->push_back({m->start, m->end, m->streamId, m->graphId, "memset", std::to_string(m->bytes) + " bytes"});
        break;
      }
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        auto* a = reinterpret_cast<CUpti_ActivityAPI*>(activity);
        const char* name = nullptr;
        if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, a->cbid, &name) == CUPTI_SUCCESS && waits_or_allocates(name))
          records->push_back({a->start, a->end, a->threadId, 0, "api", name});
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS && dropped > 0)
    std::fprintf(stderr, "kernel_trace: CUPTI dropped %zu records\n", dropped);
}

std::string output_path() {
  const char* path = std::getenv("SCALEBENCH_KERNEL_TRACE");
  std::string out = path && *path ? path : "kernel_trace_%r.csv";
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank == nullptr) rank = std::getenv("PMI_RANK");
  const size_t at = out.find("%r");
  if (at != std::string::npos) out.replace(at, 2, rank ? rank : "0");
  return out;
}

void write_records() {
  // Open MPI's singleton start forks a process that runs these handlers too, with no records of its own:
  // it must not replace the file of the process that ran the kernels.
  if (records->empty()) return;
  const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // may fail once CUPTI is torn down; the flushes before kept the records
  const std::string path = output_path();
  FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "kernel_trace: cannot write '%s'; set SCALEBENCH_KERNEL_TRACE to a writable path\n", path.c_str());
    return;
  }
  std::fprintf(file, "start_ns,end_ns,stream,graph,kind,name\n");
  std::lock_guard<std::mutex> lock(records_mutex);
  for (const Record& r : *records)
    std::fprintf(file, "%llu,%llu,%u,%u,%s,%s\n", static_cast<unsigned long long>(r.start),
                 static_cast<unsigned long long>(r.end), r.stream, r.graph, r.kind, r.name.c_str());
  const bool failed = std::fclose(file) != 0;
  if (flushed != CUPTI_SUCCESS) std::fprintf(stderr, "kernel_trace: the last flush failed (%d)\n", int(flushed));
  std::fprintf(stderr, "kernel_trace: %zu records %s '%s'\n", records->size(), failed ? "NOT written to" : "in", path.c_str());
}

// CUPTI drops the records of a context that is destroyed before they are flushed, and its own teardown may
// run before write_records: flush when a context is about to go, and every half second meanwhile.
void CUPTIAPI on_resource(void*, CUpti_CallbackDomain, CUpti_CallbackId id, const void*) {
  if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
    check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
}

}  // namespace

// The CUDA driver calls this once when CUDA_INJECTION64_PATH names this library.
extern "C" int InitializeInjection() {
  if (records != nullptr) return 1;  // the driver may call it again in the same process
  records = new std::vector<Record>();
  records->reserve(1u << 20);
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enabling kernel records");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enabling memcpy records");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enabling memset records");
  const char* api = std::getenv("SCALEBENCH_KERNEL_TRACE_API");
  if (api != nullptr && std::strcmp(api, "1") == 0)
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "enabling driver call records");
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, on_resource, nullptr) == CUPTI_SUCCESS)
    check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
          "cuptiEnableCallback");
  else
    std::fprintf(stderr, "kernel_trace: another CUPTI subscriber is present; the records are flushed every half second\n");
  check(cuptiActivityFlushPeriod(500), "cuptiActivityFlushPeriod");
  std::atexit(write_records);
  return 1;
}

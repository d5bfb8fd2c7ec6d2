// `scalebench io`: the input pipeline of image files alone, with no model, over a sweep of --workers and
// both decoders: images per second, the host cores it keeps busy, and the workers a training rate needs
// (the answer to "how many --cpus-per-task per GPU?"). On a GPU node it runs the training pipeline itself
// (workers, pinned buffers, the upload or nvJPEG's decode and the crop kernel); without a GPU, --decode cpu
// into host memory.
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/command_setup.h"
#include "cli/commands.h"
#include "cli/io_args.h"
#include "cli/io_emulation.h"
#include "cli/option_values.h"
#include "comm/root_check.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "data/dataset_spec.h"
#include "data/gpu_emulation.h"
#include "data/image_data_sets.h"
#include "data/input_rate.h"
#include "metrics/results_output_check.h"
#include "train/run_choices.h"
#ifdef SCALEBENCH_HAVE_CUDA
#include "data/cuda/gpu_input_rate.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/cuda/gpu_wait.h"
#endif

namespace sb {
namespace {

const char* const kIoHelp =
    "usage: scalebench io --data imagefolder:DIR|tars:DIR [options]\n"
    "       [mpirun -np N] scalebench io --data D --emulate-gpus LIST --target-rate R|--rate-from FILE.h5 [options]\n"
    "\n"
    "Runs the input pipeline of image files alone, with no model: the training batches (RandomResizedCrop,\n"
    "flip, normalisation) at each --workers count and with each decoder, and prints images per second, MB/s\n"
    "read, the host cores kept busy and the images per second of one worker. On a GPU node the batches are\n"
    "those training uploads (or nvJPEG decodes) into GPU memory; without a GPU, --decode cpu into host memory.\n"
    "\n"
    "options:\n"
    "  --data D            imagefolder:DIR or tars:DIR (required)\n"
    "  --decode LIST       cpu, gpu or cpu,gpu (default: cpu, and gpu where nvJPEG and a GPU are present)\n"
    "  --workers LIST      worker threads, e.g. 1,4,8,15 (default: 1, 2, 4, ... up to the cores)\n"
    "  --batch-size B      images per batch (default 256)\n"
    "  --batches N         timed batches per measurement (default 40), after --warm-up N untimed (default 8)\n"
    "  --image-size N      the crops' side (default 224)\n"
    "  --precision P       the batches' element type: fp32, fp16 or bf16 (default bf16)\n"
    "  --target-rate R     a model's training rate in images/s: print the workers each decoder needs for it\n"
    "                      (measured, else estimated at the largest count's images per busy worker-second);\n"
    "                      with --emulate-gpus, the images/s of one emulated GPU\n"
    "  --train-limit N     use the first N training images\n"
    "  --seed S            the crops' seed (default 1)\n"
    "  --out FILE          also write the rows as CSV, to a new file (an existing one is refused)\n"
    "\n"
    "Can this storage feed N GPUs? (as MLPerf Storage asks it, with the real pipeline):\n"
    "  --emulate-gpus LIST emulated GPUs per node, e.g. 1,2,4,8. Every rank reads and decodes its share of the\n"
    "                      files (one --decode: cpu, or gpu with nvJPEG on the rank's GPU; one --workers count a\n"
    "                      rank, default the node's cores over its ranks) and feeds its share of the node's\n"
    "                      emulated GPUs, each computing a batch in batch/rate seconds while the workers build\n"
    "                      the next ones; --batches counts timed steps. Prints per count the accelerator\n"
    "                      utilisation AU (the emulated compute over the wall time: the slowest rank's, so the\n"
    "                      lowest node's, with a line per node where the job spans several), MB/s and files/s\n"
    "                      per node and in all, and the stage that limits (read, decode or copy); then the\n"
    "                      largest count that keeps AU >= 90% on every node\n"
    "  --rate-from FILE    the rate of one emulated GPU from a train run's results file: the median images/s\n"
    "                      of its steady epochs over its ranks (instead of --target-rate)\n"
    "  --cold-cache        read from the storage, not the page cache: drop each file's cached pages before its\n"
    "                      first read and after each read (posix_fadvise DONTNEED); the output says whether the\n"
    "                      file system honoured it\n"
    "  --help              this text\n";



template <typename E>
E named(const std::string& option, const std::string& text) {
  const std::optional<E> value = find_by_name<E>(text);
  if (!value) throw UserError(option + " '" + text + "': expected one of " + name_list<E>());
  return *value;
}

IoArgs parse_io_args(const std::vector<std::string>& args) {
  IoArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
      return out;
    }
    if (a == "--cold-cache") {
      out.cold_cache = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) throw UserError("io takes options only, not '" + a + "' (see scalebench io --help)");
    if (i + 1 >= args.size()) throw UserError(a + " needs a value (see scalebench io --help)");
    const std::string& v = args[++i];
    const std::string name = a.substr(2);
    if (a == "--data") out.data = v;
    else if (a == "--decode") for (const std::string& d : split_list(v)) out.decoders.push_back(named<ImageDecoding>(a, d));
    else if (a == "--workers") for (const std::string& w : split_list(v)) out.workers.push_back(static_cast<int>(to_int_in(name, w, 1, 1024)));
    else if (a == "--batch-size") out.batch = to_int_in(name, v, 1, kIntMax);
    else if (a == "--batches") out.batches = to_int_in(name, v, 1, kIntMax);
    else if (a == "--warm-up") out.warm_up = to_int_in(name, v, 0, kIntMax);
    else if (a == "--image-size") out.image_size = static_cast<int>(to_int_in(name, v, 8, 4096));
    else if (a == "--precision") out.precision = named<Precision>(a, v);
    else if (a == "--target-rate") out.target_rate = static_cast<double>(to_int_in(name, v, 1, kInt64Max));
    else if (a == "--train-limit") out.train_limit = to_int_in(name, v, 1, kInt64Max);
    else if (a == "--seed") out.seed = static_cast<uint64_t>(to_int_in(name, v, 0, kInt64Max));
    else if (a == "--out") out.out = v;
    else if (a == "--emulate-gpus") out.emulate_gpus = parse_emulated_gpus(v);
    else if (a == "--rate-from") out.rate_from = v;
    else throw UserError("io has no option '" + a + "' (see scalebench io --help)");
  }
  if (out.data.empty()) throw UserError("io needs --data imagefolder:DIR or --data tars:DIR (see scalebench io --help)");
  if (out.precision == Precision::TF32) out.precision = Precision::FP32;
  return out;
}

bool gpu_present() {
#ifdef SCALEBENCH_HAVE_CUDA
  return visible_gpu_count() > 0;
#else
  return false;
#endif
}

bool nvjpeg_present() {
#ifdef SCALEBENCH_HAVE_NVJPEG
  return gpu_present();
#else
  return false;
#endif
}

struct IoRow {
  ImageDecoding decode;
  int workers;
  InputRate rate;
};

InputRate measure(const TrainTest& data, const IoArgs& a, ImageDecoding decode, int workers, const Communicator& comm) {
  const BatchFormat format{compute_dtype(a.precision), Layout::NHWC};
#ifdef SCALEBENCH_HAVE_CUDA
  if (gpu_present()) {
    cuda::InputPipelineOptions o;
    o.seed = a.seed;
    o.train_batch = o.max_batch = a.batch;
    o.drop_last = true;  // whole batches only, as a model's training rate counts them
    o.format = format;
    o.workers = workers;
    o.decode = decode;
    const cuda::GpuWait wait(comm);
    return cuda::measure_gpu_input(data.train, data.test, o, a.warm_up, a.batches,
                                   [&](const cuda::CudaEvent& event) { wait.for_event(event); });
  }
#else
  (void)comm;
  (void)decode;
#endif
  return measure_cpu_input(data.train, workers, a.batch, a.warm_up, a.batches, format, a.seed);
}

// The fewest workers measured at the rate, else the estimate at the largest count's busy seconds per image
// (workers_needed, the estimate --emulate-gpus prints too).
std::string needed_workers(const std::vector<IoRow>& rows, ImageDecoding decode, double target) {
  const IoRow* largest = nullptr;
  const IoRow* enough = nullptr;
  for (const IoRow& r : rows) {
    if (r.decode != decode) continue;
    if (!largest || r.workers > largest->workers) largest = &r;
    if (r.rate.images_per_s >= target && (!enough || r.workers < enough->workers)) enough = &r;
  }
  if (!largest) return "";
  char line[200];
  if (enough) {
    std::snprintf(line, sizeof line, "%d worker(s) measured at %.0f img/s", enough->workers, enough->rate.images_per_s);
  } else {
    const InputTotals& t = largest->rate.totals;
    std::snprintf(line, sizeof line, "about %d workers (%d measured gave %.0f img/s, %.0f per busy worker-second)",
                  workers_needed(target, t), largest->workers, largest->rate.images_per_s, images_per_worker_second(t));
  }
  return line;
}

// The choices that --decode and --workers leave open, and the checks of the options against the data
// and the machine; the data set named by --data.
DatasetSpec check_io_args(IoArgs& a, const MpiSession& session) {
  const DatasetSpec spec = parse_dataset_spec(a.data);
  if (!streamed(spec))
    throw UserError("io measures the pipeline of image files; --data " + a.data + " is held decoded in memory: give "
                    "imagefolder:DIR or tars:DIR");
  for (ImageDecoding d : a.decoders)
    if (d == ImageDecoding::Gpu && !nvjpeg_present())
      throw UserError("--decode gpu needs nvJPEG and a visible GPU; this scalebench " +
                      std::string(gpu_present() ? "was built without nvJPEG" : "sees no GPU") + ": use --decode cpu");
  check_emulation_args(a, session);
  if (a.decoders.empty()) {
    a.decoders.push_back(ImageDecoding::Cpu);
    if (nvjpeg_present()) a.decoders.push_back(ImageDecoding::Gpu);
  }
  if (a.workers.empty()) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int w = 1; w < cores; w *= 2) a.workers.push_back(w);
    a.workers.push_back(cores);
  }
  return spec;
}

// Rank 0 writes --out: a file already there holds earlier rows and is never replaced.
void check_io_out(const std::string& out) {
  if (path_exists(out))
    throw UserError("--out " + out + " already exists, and scalebench never replaces a results file: choose another --out, "
                    "or remove the file first to replace it");
  check_output_writable(out, "the rows' CSV file (--out)");
}

TrainTest load_io_data(const IoArgs& a, const DatasetSpec& spec) {
  TrainTest data = load_dataset(spec, a.train_limit);
  set_image_sizes(data, a.image_size, std::max(kDefaultValResize, a.image_size));
  if (data.train.size() < a.batch)
    throw UserError("--batch-size " + std::to_string(a.batch) + " is more than the " + std::to_string(data.train.size()) +
                    " training images of " + a.data + "; lower --batch-size");
  return data;
}

// The options and the data, every check before any measurement, each a sentence naming the option;
// false when --help asked for the help text (printed here).
bool read_io_inputs(MpiSession& session, const std::vector<std::string>& args, IoArgs& a, TrainTest& data) {
  const bool root = session.rank() == 0;
  try {
    a = parse_io_args(args);
    if (a.help) {
      if (root) std::fputs(kIoHelp, stdout);
      return false;
    }
    if (session.size() != 1 && a.emulate_gpus.empty())
      throw UserError("io runs on one process (one rank's pipeline); start it without mpirun, or give --emulate-gpus LIST "
                      "to feed emulated GPUs from every rank");
    const DatasetSpec spec = check_io_args(a, session);
    if (!a.out.empty()) check_on_root(session.world(), 0, [&] { check_io_out(a.out); });
    data = load_io_data(a, spec);
    if (!a.emulate_gpus.empty()) check_emulation_data(a, data, session.size());
  } catch (const UserError& e) {
    throw AgreedError(e.what(), session.size(), root);
  }
  return true;
}

// Each decoder at each worker count, a printed line each as it is measured.
std::vector<IoRow> measure_rows(const TrainTest& data, const IoArgs& a, const Communicator& comm) {
  std::printf("io: %s, %lld training images, batches of %lld %dx%d crops in %s, %lld timed after %lld\n", a.data.c_str(),
              static_cast<long long>(data.train.size()), static_cast<long long>(a.batch), a.image_size, a.image_size,
              name_of(a.precision), static_cast<long long>(a.batches), static_cast<long long>(a.warm_up));
  std::printf("%-7s %8s %10s %9s %11s %15s\n", "decode", "workers", "img/s", "MB/s", "busy cores", "img/s/worker");
  std::vector<IoRow> rows;
  for (ImageDecoding decode : a.decoders)
    for (int workers : a.workers) {
      const InputRate rate = measure(data, a, decode, workers, comm);
      rows.push_back(IoRow{decode, workers, rate});
      std::printf("%-7s %8d %10.0f %9.1f %11.2f %15.1f\n", name_of(decode), workers, rate.images_per_s, rate.bytes_per_s / 1e6,
                  rate.busy_cores, rate.images_per_s / workers);
      std::fflush(stdout);
    }
  return rows;
}

void write_io_csv(const std::string& path, const std::vector<IoRow>& rows) {
  std::ofstream csv(path);
  csv << "decode,workers,images_per_s,mb_per_s,busy_cores,images_per_s_per_worker,read_s,decode_s,augment_s,copy_s\n";
  for (const IoRow& r : rows)
    csv << name_of(r.decode) << ',' << r.workers << ',' << r.rate.images_per_s << ',' << r.rate.bytes_per_s / 1e6 << ','
        << r.rate.busy_cores << ',' << r.rate.images_per_s / r.workers << ',' << r.rate.totals.read_seconds << ','
        << r.rate.totals.decode_seconds << ',' << r.rate.totals.augment_seconds << ',' << r.rate.totals.copy_seconds << '\n';
  if (!csv) throw UserError("--out " + path + ": writing failed");
}

}  // namespace

int io_command(MpiSession& session, const std::vector<std::string>& args) {
  IoArgs a;
  TrainTest data;
  if (!read_io_inputs(session, args, a, data)) return 0;  // --help
  if (!a.emulate_gpus.empty()) {
    run_io_emulation(session, a, data);
    return 0;
  }
  const std::vector<IoRow> rows = measure_rows(data, a, session.world());
  if (a.target_rate > 0)
    for (ImageDecoding decode : a.decoders)
      std::printf("io: %.0f img/s with --decode %s needs %s\n", a.target_rate, name_of(decode),
                  needed_workers(rows, decode, a.target_rate).c_str());
  if (!a.out.empty()) write_io_csv(a.out, rows);
  return 0;
}

}  // namespace sb

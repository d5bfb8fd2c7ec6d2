#include "train/reporting/run_reporting.h"

#include "train/reporting/arrivals_observer.h"
#include "train/reporting/bucket_ready_observer.h"
#include "train/reporting/epoch_readings_observer.h"
#include "train/reporting/first_step_observer.h"
#include "train/reporting/gpu_clocks_observer.h"
#include "train/reporting/input_pipeline_observer.h"
#include "train/reporting/mllog_observer.h"
#include "train/reporting/nvtx_observer.h"
#include "train/reporting/progress_observer.h"
#include "train/reporting/step_phases_observer.h"
#include "train/reporting/trace_observer.h"

namespace sb {

template <typename Observer>
void RunReporting::own(std::unique_ptr<Observer> observer) {
  if (!observer) return;
  subscribe(*observer);
  owned_.push_back(std::move(observer));
}

RunReporting::RunReporting(const TrainConfig& config, Communicator& comm, Engine& engine, TrainObserver* results,
                           MlLog* mllog) {
  EngineMeasurements& measurements = engine.measurements();
  own(std::make_unique<NvtxObserver>());
  own(std::make_unique<FirstStepObserver>());
  own(std::make_unique<StepPhasesObserver>(comm, config.sample_steps));
  own(std::make_unique<ArrivalsObserver>(comm, config.sample_steps));
  own(std::make_unique<BucketReadyObserver>(comm));
  own(std::make_unique<GpuClocksObserver>(comm, measurements));
  own(std::make_unique<EpochReadingsObserver>(comm, measurements.readings()));
  own(std::make_unique<InputPipelineObserver>(comm, measurements));
  own(TraceObserver::open(config.trace, comm));
  own(std::make_unique<ProgressObserver>(config, engine, comm.rank(), comm.size()));
  if (results) subscribe(*results);
  if (mllog) own(std::make_unique<MllogObserver>(*mllog, config.target_accuracy));
}

}  // namespace sb

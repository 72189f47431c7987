#include "client/embedded.hpp"

#include <new>

#include <sys/mman.h>

#include <array>
#include <cstdlib>
#include <optional>

#include "config/config.hpp"
#include "rt/runtime_setup.hpp"

namespace tandem::client {

namespace {

// Ring memory: page-aligned, zeroed, released with munmap when the last holder lets go.
std::shared_ptr<void> map_ring(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
}

}  // namespace

Result<std::unique_ptr<Runtime>> EmbeddedRuntime::create(const RuntimeOptions& options) {
  std::string path = options.config_path;
  if (path.empty()) {
    if (const char* env = std::getenv("TANDEM_CONFIG")) path = env;
  }
  config::Config config;
  try {
    config = options.config_text.empty() ? config::load_config(path)
                                         : config::parse_config(options.config_text, options.config_source.empty()
                                                                                          ? "<options.config_text>"
                                                                                          : options.config_source);
  } catch (const Error& e) {
    return Result<std::unique_ptr<Runtime>>(e.status(), e.what());
  }
  // The calibration first: the emulated accelerators' speeds are relative to its X_c when it has one,
  // so that the calibrated X_a and the device agree.
  std::optional<Calibration> calibration = options.calibration;
  if (!calibration) {
    const std::string file =
        options.calibration_path.empty() ? find_calibration_file(config.calibration_file) : options.calibration_path;
    if (!file.empty()) {
      try {
        calibration = load_calibration(file);
      } catch (const Error& e) {
        return Result<std::unique_ptr<Runtime>>(e.status(), e.what());
      }
    }
  }
  // X_c is the CPU's: the emulated speeds are relative to it when the calibration was made on a
  // device this runtime drives (its accelerator figures are then consistent with the device's).
  const bool calibrated = calibration && config.device.uses(calibration->device);
  rt::SetupOptions setup;
  setup.cpu_rate = [&](uint16_t f) {
    return calibrated && calibration->functions[f] ? calibration->functions[f]->xc : 0.0;
  };
  std::unique_ptr<EmbeddedRuntime> runtime(new EmbeddedRuntime(options));
  try {
    runtime->dispatcher_ = rt::build_dispatcher(config, setup);  // throws for a device this build lacks
  } catch (const Error& e) {
    return Result<std::unique_ptr<Runtime>>(e.status(), e.what());
  }
  std::vector<DeviceSummary> devices;
  for (size_t i = 0; i < runtime->dispatcher_->device_count(); ++i) {
    const devices::DeviceInfo& info = runtime->dispatcher_->device_info(i);
    devices.push_back(DeviceSummary{info.kind, info.name, runtime->dispatcher_->first_slot(i), info.slots,
                                    info.loadable, info.models, info.memory, info.copy_models});
  }
  runtime->init_devices(std::move(devices), runtime->dispatcher_->engine_config().max_job_ns);
  runtime->init_cost_params(calibration ? &*calibration : nullptr);
  rt::Dispatcher& d = *runtime->dispatcher_;
  d.start();
  runtime->session_ = d.open_session(std::make_shared<rt::IdentityAddressSpace>());
  Status s = runtime->init_default_queue();
  if (s != Status::ok) return Result<std::unique_ptr<Runtime>>(s, "cannot create the default queue");
  return std::unique_ptr<Runtime>(std::move(runtime));
}

EmbeddedRuntime::~EmbeddedRuntime() {
  stop_service();
  close_default_queue();
  if (dispatcher_) dispatcher_->stop();  // drains what is still in flight
  release_thread_records();
  std::lock_guard lock(allocations_mutex_);
  for (void* p : allocations_) std::free(p);
  allocations_.clear();
}

Result<std::unique_ptr<Queue>> EmbeddedRuntime::create_queue(uint32_t capacity) {
  if (capacity == 0) capacity = 1024;
  if (!abi::is_power_of_two(capacity) || capacity < TANDEM_RING_MIN_CAPACITY || capacity > TANDEM_RING_MAX_CAPACITY) {
    return Result<std::unique_ptr<Queue>>(Status::invalid_argument, "queue capacity must be a power of two in [2, 2^20]");
  }
  const size_t bytes = TANDEM_RING_BYTES(capacity);
  std::shared_ptr<void> memory = map_ring(bytes);
  if (!memory) return Result<std::unique_ptr<Queue>>(Status::no_memory, "cannot map ring memory");
  abi::format_ring(memory.get(), bytes, capacity, 0);
  auto ring = dispatcher_->attach_ring(session_, memory.get(), capacity, memory);
  if (!ring) return Result<std::unique_ptr<Queue>>(ring.status(), ring.message());
  return std::make_unique<Queue>(*this, abi::RingProducer(memory.get()), memory, ring.value());
}

Status EmbeddedRuntime::attach_service_ring(uint32_t slots, std::shared_ptr<void>& memory, void*& base) {
  const size_t bytes = TANDEM_SERVICE_BYTES(slots);
  memory = map_ring(bytes);
  if (!memory) return Status::no_memory;
  if (Status s = abi::format_service_ring(memory.get(), bytes, slots); s != Status::ok) return s;
  base = memory.get();
  return dispatcher_->attach_service(session_, base, bytes, slots, memory);
}

void EmbeddedRuntime::release_ring(uint32_t ring_id) {
  if (dispatcher_) dispatcher_->detach_ring(ring_id);
}

Result<void*> EmbeddedRuntime::allocate(size_t bytes) {
  size_t rounded = 0;
  if (!round_allocation(bytes, rounded)) {
    return Result<void*>(Status::no_memory, "tandem_alloc: " + std::to_string(bytes) + " bytes exceed the largest object size (PTRDIFF_MAX)");
  }
  void* p = std::aligned_alloc(kAllocAlign, rounded);
  if (p == nullptr) return Result<void*>(Status::no_memory, "tandem_alloc: no memory for " + std::to_string(bytes) + " bytes");
  try {
    std::lock_guard lock(allocations_mutex_);
    allocations_.insert(p);
  } catch (const std::bad_alloc&) {
    std::free(p);
    return Result<void*>(Status::no_memory, "tandem_alloc: no memory to track " + std::to_string(bytes) + " bytes");
  }
  return p;
}

void EmbeddedRuntime::free(void* memory) {
  {
    std::lock_guard lock(allocations_mutex_);
    if (allocations_.erase(memory) == 0) return;  // not ours, or freed already
  }
  std::free(memory);
}

}  // namespace tandem::client

#include "client/daemon_runtime.hpp"

#include <algorithm>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "abi/ring.hpp"
#include "client/trace.hpp"
#include "funcs/throughput.hpp"
#include "model/access_model.hpp"

namespace tandem::client {

using abi::control::MessageType;

namespace {

constexpr int64_t kRequestTimeoutNs = 10'000'000'000;  // a daemon that does not answer in 10 s is gone
constexpr size_t kChunkBytes = 4u << 20;                  // session memory grows 4 MiB at a time

Status status_of_error(const rt::Frame& f, std::string& message) {
  abi::control::ErrorReply e{};
  if (f.payload.size() >= sizeof e) std::memcpy(&e, f.payload.data(), sizeof e);
  message.assign(reinterpret_cast<const char*>(f.payload.data()) + std::min(f.payload.size(), sizeof e),
                 f.payload.size() - std::min(f.payload.size(), sizeof e));
  const Status s = from_wire(e.status);
  return s == Status::ok ? Status::protocol_error : s;
}

// The device list after HelloOk (abi/control.hpp), checked against the payload's size; `p` moves past it.
Result<std::vector<DeviceSummary>> parse_devices(const rt::Frame& frame, const abi::control::HelloOk& ok,
                                                 const std::byte*& p) {
  using R = Result<std::vector<DeviceSummary>>;
  namespace ctl = abi::control;
  const std::byte* end = frame.payload.data() + frame.payload.size();
  if (ok.device_count == 0 || ok.device_count > ctl::kMaxDevices) return R(Status::protocol_error, "hello: bad device count");
  const auto name_of = [](const char (&field)[ctl::kDeviceNameBytes]) {
    return std::string(field, strnlen(field, ctl::kDeviceNameBytes));
  };
  std::vector<DeviceSummary> devices;
  for (uint32_t d = 0; d < ok.device_count; ++d) {
    ctl::DeviceEntry e;
    if (end - p < static_cast<std::ptrdiff_t>(sizeof e)) return R(Status::protocol_error, "hello: device list cut short");
    std::memcpy(&e, p, sizeof e);
    p += sizeof e;
    if (e.function_count > TANDEM_FN_MAX ||
        end - p < static_cast<std::ptrdiff_t>(e.function_count * sizeof(ctl::FunctionEntry))) {
      return R(Status::protocol_error, "hello: function list cut short");
    }
    DeviceSummary s{name_of(e.kind), name_of(e.name), e.first_slot, e.slots, {}, {}, {}};
    devices::DeviceMemoryInfo& m = s.memory;
    m.copy_engines = e.copy_engines;
    m.local_bytes = e.local_bytes;
    m.copy_engine_bps = e.copy_engine_bps;
    m.copy_engine_setup_s = e.copy_engine_setup_s;
    m.transfer = devices::TransferModel{e.link_bps, e.dma_setup_s, e.sg_bps, e.sg_setup_s, e.sg_page_s, e.local_bps};
    m.max_job_buffer_bytes = e.max_job_buffer_bytes;
    for (uint32_t i = 0; i < e.function_count; ++i) {
      ctl::FunctionEntry f;
      std::memcpy(&f, p, sizeof f);
      p += sizeof f;
      if (f.function >= TANDEM_FN_MAX) return R(Status::protocol_error, "hello: function id out of range");
      s.loadable.set(f.function);
      s.models[f.function] = model::AccelModel{f.throughput, f.latency_s, f.reconfig_s, f.bandwidth_bps};
      // Figures with copies that no measurement gives (negative, not finite, a latency over an hour, a
      // rate over 1e15 units/s) are not trusted: the function then costs the same every way.
      constexpr double kMaxLatencyS = 3600, kMaxThroughput = 1e15;
      const auto plausible = [](double v, double max) { return std::isfinite(v) && v >= 0 && v < max; };
      if (plausible(f.copy_latency_s, kMaxLatencyS) && plausible(f.copy_throughput, kMaxThroughput)) {
        s.copy_models[f.function] = model::AccelModel{f.copy_throughput, f.copy_latency_s, 0, 0};
      }
    }
    devices.push_back(std::move(s));
  }
  return devices;
}

// The host figures after the device list (HostEntry), checked against the payload's size. Kept here
// until the session is set up; then adopt() hands them to the process (below).
struct HostFigures {
  double cycles_per_s = 0;
  std::vector<std::pair<uint16_t, double>> rates;
  std::optional<model::HostAccessCosts> access;  // when every figure is plausible

  // The software rates and the TSC's rate go to the process's tables (funcs::adopt_software_throughput,
  // adopt_cycles_per_second: a figure already known stays, an implausible one is refused and measured
  // here instead when needed).
  void adopt() const {
    for (const auto& [function, rate] : rates) (void)funcs::adopt_software_throughput(function, rate);
    (void)funcs::adopt_cycles_per_second(cycles_per_s);
  }
};

Status parse_host(const rt::Frame& frame, const std::byte* p, HostFigures& out) {
  namespace ctl = abi::control;
  const std::byte* end = frame.payload.data() + frame.payload.size();
  ctl::HostEntry h;
  if (end - p < static_cast<std::ptrdiff_t>(sizeof h)) return Status::protocol_error;
  std::memcpy(&h, p, sizeof h);
  p += sizeof h;
  if (h.function_count > TANDEM_FN_MAX || end - p != static_cast<std::ptrdiff_t>(h.function_count * sizeof(ctl::HostRate))) {
    return Status::protocol_error;
  }
  for (uint32_t i = 0; i < h.function_count; ++i) {
    ctl::HostRate r;
    std::memcpy(&r, p, sizeof r);
    p += sizeof r;
    out.rates.emplace_back(r.function, r.units_per_s);
  }
  out.cycles_per_s = h.cycles_per_s;
  // The ranges a calibration file's [access] table accepts (client/calibration.cc).
  const auto rate_ok = [](double bps) { return bps >= 1e3 && bps <= 1e15; };
  if (rate_ok(h.memcpy_bps) && rate_ok(h.gather_bps) && h.gather_page_s >= 0 && h.gather_page_s <= 1) {
    model::HostAccessCosts c;
    c.memcpy_bps = h.memcpy_bps;
    c.gather_bps = h.gather_bps;
    c.gather_page_s = h.gather_page_s;
    out.access = c;
  }
  return Status::ok;
}

}  // namespace

Result<std::unique_ptr<Runtime>> DaemonRuntime::connect(const RuntimeOptions& options, const std::string& socket_path) {
  using R = Result<std::unique_ptr<Runtime>>;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return R(Status::invalid_argument, "socket path too long");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  std::unique_ptr<DaemonRuntime> rt(new DaemonRuntime(options));
  rt->sock_.reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!rt->sock_.valid()) return R(Status::io_error, "socket: " + std::string(std::strerror(errno)));
  if (::connect(rt->sock_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return R(Status::disconnected, "cannot connect to tandemd at " + socket_path + ": " + std::strerror(errno));
  }
  abi::control::Hello hello;
  hello.abi_version = TANDEM_ABI_VERSION;
  hello.pid = static_cast<uint32_t>(getpid());
  auto reply = rt->request(MessageType::hello, &hello, sizeof hello);
  if (!reply) return R(reply.status(), "tandemd refused the session: " + reply.message());
  if (reply.value().type() != MessageType::hello_ok || !reply.value().fd.valid()) {
    return R(Status::protocol_error, "unexpected reply to hello");
  }
  const rt::Frame& frame = reply.value();
  const auto ok = frame.prefix_as<abi::control::HelloOk>();
  if (frame.payload.size() < sizeof ok || ok.metrics_bytes < sizeof(tandem_metrics_page_t)) {
    return R(Status::protocol_error, "malformed reply to hello");
  }
  const std::byte* cursor = frame.payload.data() + sizeof ok;
  auto devices = parse_devices(frame, ok, cursor);
  if (!devices) return R(devices.status(), devices.message());
  HostFigures host;
  if (parse_host(frame, cursor, host) != Status::ok) return R(Status::protocol_error, "hello: host figures cut short or too long");
  auto metrics = rt::map_fd(reply.value().fd.get(), ok.metrics_bytes, 0, false);  // read-only for clients
  if (!metrics) return R(metrics.status(), metrics.message());
  rt->metrics_ = metrics.value();
  rt->asid_ = ok.asid;
  rt->max_registered_bytes_ = ok.max_registered_bytes;
  // The partitioner's parameters: a calibration made for the device that holds each function if there
  // is one, else defaults from the daemon's device models.
  std::optional<Calibration> calibration = options.calibration;
  const std::string cal_file = options.calibration_path.empty() ? find_calibration_file("") : options.calibration_path;
  if (!calibration && !cal_file.empty()) {
    try {
      calibration = load_calibration(cal_file);
    } catch (const Error& e) {
      return R(e.status(), e.what());
    }
  }
  rt->attach_trace_area();
  rt->init_devices(std::move(devices).value(), ok.max_job_ns);
  host.adopt();  // the session is set up: its daemon's figures stand in for this process's measurements
  rt->init_cost_params(calibration ? &*calibration : nullptr, host.access ? &*host.access : nullptr);
  if (Status s = rt->init_default_queue(); s != Status::ok) return R(s, "cannot create the default queue");
  return std::unique_ptr<Runtime>(std::move(rt));
}

// The session's trace area (client/trace.hpp). A daemon that offers none leaves tracing off here:
// nothing else depends on it.
void DaemonRuntime::attach_trace_area() {
  auto reply = request(MessageType::trace_attach, nullptr, 0);
  if (!reply || reply.value().type() != MessageType::trace_area_ok || !reply.value().fd.valid()) return;
  const auto ok = reply.value().as<abi::control::TraceAreaOk>();
  if (ok.bytes == 0 || ok.bytes > (size_t{1} << 32)) return;
  auto mapping = rt::map_fd(reply.value().fd.get(), ok.bytes, 0, true);
  if (!mapping) return;
  abi::trace::AreaView area;
  if (!abi::trace::validate_area(mapping.value()->address, ok.bytes, area) || area.rings != ok.rings ||
      area.capacity != ok.capacity) {
    return;
  }
  trace_mapping_ = mapping.value();
  init_trace_area(with_generation(area));
}

DaemonRuntime::~DaemonRuntime() {
  stop_service();
  close_default_queue();
  release_thread_records();
  if (!disconnected_) {
    std::lock_guard lock(control_mutex_);
    rt::send_frame(sock_.get(), MessageType::bye, next_request_++, nullptr, 0);
  }
}

Result<rt::Frame> DaemonRuntime::request(MessageType type, const void* payload, size_t bytes, int fd) {
  if (disconnected_) return Result<rt::Frame>(Status::disconnected, "the daemon went away");
  std::lock_guard lock(control_mutex_);
  const uint32_t id = next_request_++;
  Status s = rt::send_frame(sock_.get(), type, id, payload, bytes, fd);
  if (s == Status::invalid_argument) return Result<rt::Frame>(s, "descriptor " + std::to_string(fd) + " is not open");
  if (s != Status::ok && s != Status::disconnected) {
    if (s == Status::io_error) disconnected_ = true;
    return Result<rt::Frame>(s, "cannot send to the daemon");
  }
  // Gone before it read our request: it may have said why first (a refused connection), so read that.
  auto reply = rt::recv_frame(sock_.get(), s == Status::disconnected ? 100'000'000 : kRequestTimeoutNs);
  if (!reply) {
    if (reply.status() == Status::disconnected || reply.status() == Status::io_error || s != Status::ok) {
      disconnected_ = true;
    }
    if (s == Status::ok) return reply;
    return Result<rt::Frame>(Status::disconnected, "the daemon closed the connection");
  }
  // Request id 0: the daemon speaks about the connection itself (refused, timed out, dropped).
  const bool about_connection = reply.value().header.request_id == 0 && reply.value().type() == MessageType::error;
  if (reply.value().header.request_id != id && !about_connection) {
    return Result<rt::Frame>(Status::protocol_error, "reply out of order");
  }
  if (about_connection) disconnected_ = true;  // it hangs up after saying so
  if (reply.value().type() == MessageType::error) {
    std::string message;
    const Status err = status_of_error(reply.value(), message);
    return Result<rt::Frame>(err, message);
  }
  return reply;
}

Status DaemonRuntime::check() {
  if (disconnected_) return Status::disconnected;
  pollfd p{sock_.get(), POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return Status::ok;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) {
    disconnected_ = true;
    return Status::disconnected;
  }
  if (p.revents & POLLIN) {  // the daemon sends nothing unasked: EOF? (A request in flight reads it.)
    std::unique_lock lock(control_mutex_, std::try_to_lock);
    char c;
    if (lock.owns_lock() && recv(sock_.get(), &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
      disconnected_ = true;
      return Status::disconnected;
    }
  }
  return Status::ok;
}

Result<std::unique_ptr<Queue>> DaemonRuntime::create_queue(uint32_t capacity) {
  using R = Result<std::unique_ptr<Queue>>;
  if (capacity == 0) capacity = 1024;
  abi::control::CreateQueue req;
  req.capacity = capacity;
  auto reply = request(MessageType::create_queue, &req, sizeof req);
  if (!reply) return R(reply.status(), reply.message());
  const auto ok = reply.value().as<abi::control::QueueOk>();
  if (reply.value().type() != MessageType::queue_ok || !reply.value().fd.valid() || ok.capacity != capacity ||
      ok.ring_bytes < TANDEM_RING_BYTES(capacity)) {
    return R(Status::protocol_error, "unexpected reply to create_queue");
  }
  auto mapping = rt::map_fd(reply.value().fd.get(), ok.ring_bytes, 0, true);
  if (!mapping) return R(mapping.status(), mapping.message());
  if (abi::validate_ring(mapping.value()->address, ok.ring_bytes) != Status::ok) {
    return R(Status::protocol_error, "the daemon's ring is not valid");
  }
  return std::make_unique<Queue>(*this, abi::RingProducer(mapping.value()->address), mapping.value(), ok.queue_id);
}

void DaemonRuntime::release_ring(uint32_t queue_id) {
  abi::control::DestroyQueue req;
  req.queue_id = queue_id;
  request(MessageType::destroy_queue, &req, sizeof req);  // nothing to do if it fails: the daemon is gone
}

Result<uint32_t> DaemonRuntime::register_region(uint64_t base, uint64_t bytes, int fd, uint64_t offset) {
  abi::control::RegisterMemory req;
  req.client_base = base;
  req.bytes = bytes;
  req.fd_offset = offset;
  req.flags = abi::control::kRegionWritable;
  auto reply = request(MessageType::register_memory, &req, sizeof req, fd);
  if (!reply) return Result<uint32_t>(reply.status(), reply.message());
  if (reply.value().type() != MessageType::region_ok) return Result<uint32_t>(Status::protocol_error, "bad reply");
  return reply.value().as<abi::control::RegionOk>().region_id;
}

void* DaemonRuntime::carve(Chunk& c, size_t bytes) {
  for (auto it = c.free_blocks.begin(); it != c.free_blocks.end(); ++it) {
    if (it->second < bytes) continue;
    const size_t offset = it->first, left = it->second - bytes;
    c.free_blocks.erase(it);
    if (left > 0) c.free_blocks[offset + bytes] = left;
    c.used += bytes;
    return c.mapping->begin() + offset;
  }
  return nullptr;
}

Result<void*> DaemonRuntime::allocate(size_t bytes) {
  using R = Result<void*>;
  const std::string what = "tandem_alloc: " + std::to_string(bytes) + " bytes";
  size_t rounded = 0;
  if (!round_allocation(bytes, rounded) || rounded > max_registered_bytes_) {
    return R(Status::limit_exceeded, what + " exceed the session's limit of " +
                                         std::to_string(max_registered_bytes_ >> 20) + " MiB of registered memory");
  }
  {
    std::lock_guard lock(memory_mutex_);
    for (auto& c : chunks_) {
      if (void* p = carve(*c, rounded)) {
        allocations_[reinterpret_cast<uintptr_t>(p)] = {c.get(), rounded};
        return p;
      }
    }
  }
  // A new chunk: a memfd the daemon maps too. Made and registered without the lock, which calls
  // (and every in_session_memory) would otherwise wait on for the daemon's round trip; two threads
  // that both find no room each add a chunk.
  const size_t chunk_bytes = std::max(kChunkBytes, rt::round_to_pages(rounded));
  auto fd = rt::create_memfd("tandem-session", chunk_bytes, false);
  if (!fd) return R(fd.status(), what + ": " + fd.message());
  auto mapping = rt::map_fd(fd.value().get(), chunk_bytes, 0, true);
  if (!mapping) return R(mapping.status(), what + ": " + mapping.message());
  auto region = register_region(reinterpret_cast<uintptr_t>(mapping.value()->address), chunk_bytes, fd.value().get(), 0);
  if (!region) return R(region.status(), what + ": " + region.message());
  auto chunk = std::make_unique<Chunk>();
  chunk->mapping = mapping.value();
  chunk->region = region.value();
  chunk->free_blocks[0] = chunk_bytes;
  void* p = carve(*chunk, rounded);
  std::lock_guard lock(memory_mutex_);
  allocations_[reinterpret_cast<uintptr_t>(p)] = {chunk.get(), rounded};
  chunks_.push_back(std::move(chunk));
  return p;
}

void DaemonRuntime::free(void* memory) {
  if (memory == nullptr) return;
  std::unique_ptr<Chunk> emptied;  // a chunk this free empties: unregistered once the lock is released
  std::unique_lock lock(memory_mutex_);
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(memory));
  if (it == allocations_.end()) return;  // not ours: ignore rather than corrupt the arena
  auto [chunk, bytes] = it->second;
  allocations_.erase(it);
  size_t offset = static_cast<size_t>(static_cast<char*>(memory) - chunk->mapping->begin());
  size_t size = bytes;
  auto next = chunk->free_blocks.lower_bound(offset);
  if (next != chunk->free_blocks.end() && next->first == offset + size) {  // coalesce with the next block
    size += next->second;
    next = chunk->free_blocks.erase(next);
  }
  if (next != chunk->free_blocks.begin()) {  // and with the previous one
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      chunk->free_blocks.erase(prev);
    }
  }
  chunk->free_blocks[offset] = size;
  chunk->used -= bytes;
  // An empty chunk other than the first goes back to the system (and out of the daemon's tables).
  // The daemon is told after the lock is released; nothing can carve from the chunk meanwhile.
  if (chunk->used == 0 && chunks_.size() > 1 && chunk != chunks_.front().get()) {
    auto owner = std::find_if(chunks_.begin(), chunks_.end(), [chunk](const std::unique_ptr<Chunk>& c) { return c.get() == chunk; });
    emptied = std::move(*owner);
    chunks_.erase(owner);
  }
  lock.unlock();
  if (emptied) {
    abi::control::UnregisterMemory req;
    req.region_id = emptied->region;
    request(MessageType::unregister_memory, &req, sizeof req);
  }  // and its mapping goes with it
}

bool DaemonRuntime::in_session_memory(const void* memory, size_t bytes) const {
  const auto begin = reinterpret_cast<uintptr_t>(memory);
  if (begin + bytes < begin) return false;
  // PHASE/V: any address of ours is named in place; a page we do not have ends the job with
  // TRANSLATION_FAULT (tandemd checks it against this process's mappings).
  if (address_mode_.load(std::memory_order_acquire) == TANDEM_ADDRESS_PHASEV) return true;
  std::lock_guard lock(memory_mutex_);
  for (const auto& c : chunks_) {
    const auto base = reinterpret_cast<uintptr_t>(c->mapping->address);
    if (begin >= base && begin + bytes <= base + c->mapping->bytes) return true;
  }
  // Registered regions: the one starting at or below `memory`.
  auto it = registered_.upper_bound(begin);
  if (it == registered_.begin()) return false;
  --it;
  return begin + bytes <= it->first + it->second.bytes;
}

Result<uint64_t> DaemonRuntime::alloc_local(size_t bytes) {
  abi::control::AllocLocal req;
  req.bytes = bytes;
  auto reply = request(MessageType::alloc_local, &req, sizeof req);
  if (!reply) return Result<uint64_t>(reply.status(), reply.message());
  if (reply.value().type() != MessageType::local_ok) return Result<uint64_t>(Status::protocol_error, "bad reply");
  return reply.value().as<abi::control::LocalOk>().device_address;
}

Status DaemonRuntime::free_local(uint64_t device_address) {
  abi::control::LocalOk req;
  req.device_address = device_address;
  auto reply = request(MessageType::free_local, &req, sizeof req);
  return reply ? Status::ok : reply.status();
}

Status DaemonRuntime::attach_service_ring(uint32_t slots, std::shared_ptr<void>& memory, void*& base) {
  const size_t bytes = rt::round_to_pages(TANDEM_SERVICE_BYTES(slots));
  auto fd = rt::create_memfd("tandem-service", bytes, false);
  if (!fd) return fd.status();
  auto mapping = rt::map_fd(fd.value().get(), bytes, 0, true);
  if (!mapping) return mapping.status();
  if (Status s = abi::format_service_ring(mapping.value()->address, bytes, slots); s != Status::ok) return s;
  abi::control::AttachService req;
  req.slots = slots;
  auto reply = request(MessageType::attach_service, &req, sizeof req, fd.value().get());
  if (!reply) return reply.status();
  base = mapping.value()->address;
  memory = mapping.value();
  return Status::ok;
}

Status DaemonRuntime::set_address_mode(uint8_t mode) {
  abi::control::SetAddressMode req;
  req.mode = mode;
  auto reply = request(MessageType::set_address_mode, &req, sizeof req);
  if (!reply) return reply.status();
  address_mode_.store(mode, std::memory_order_release);
  return Status::ok;
}

Status DaemonRuntime::attach_memory(void* address, size_t bytes, int memfd, uint64_t offset, std::string& why) {
  auto region = register_region(reinterpret_cast<uintptr_t>(address), bytes, memfd, offset);
  if (!region) {
    why = region.message();
    return region.status();
  }
  std::lock_guard lock(memory_mutex_);
  registered_[reinterpret_cast<uintptr_t>(address)] = Registered{nullptr, region.value(), bytes};
  return Status::ok;
}

Status DaemonRuntime::unregister_memory(void* address) {
  uint32_t region;
  {
    std::lock_guard lock(memory_mutex_);
    auto it = registered_.find(reinterpret_cast<uintptr_t>(address));
    if (it == registered_.end()) return Status::invalid_argument;
    region = it->second.region;
    registered_.erase(it);
  }
  abi::control::UnregisterMemory req;
  req.region_id = region;
  auto reply = request(MessageType::unregister_memory, &req, sizeof req);
  return reply ? Status::ok : reply.status();
}

}  // namespace tandem::client

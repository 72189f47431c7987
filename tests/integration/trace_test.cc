// Per-job trace records in one process (docs/tracing.md): the dispatcher's records of known jobs, the
// ring and the collector's store dropping and counting when full, and the dump's bytes checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/embedded.hpp"
#include "client/trace_export.hpp"
#include "rt/completion.hpp"
#include "rt/trace.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

namespace tr = abi::trace;
using testing::open_embedded;
using testing::run_noops;


std::vector<tr::Record> jobs_of(const rt::TraceDump& d) {
  std::vector<tr::Record> out;
  for (const tr::Record& r : d.records) {
    if (r.kind == static_cast<uint16_t>(tr::Kind::job)) out.push_back(r);
  }
  return out;
}

TEST(Trace, KnownJobsGiveExactlyThoseRecordsWithMonotonePhases) {
  auto rt = open_embedded("", client::Mode::hw);
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(256);
  ASSERT_TRUE(q.ok());
  rt::TraceCollector collector{rt::TraceSettings{}};
  collector.attach(static_cast<client::EmbeddedRuntime&>(*rt).dispatcher());
  run_noops(*rt, *q.value(), 1, 50);  // before tracing: not recorded
  collector.start();
  run_noops(*rt, *q.value(), 1000, 300);
  // A packet for a function nobody has: refused, recorded as such.
  tandem_completion_t* rec = rt->thread_records();
  rt::reset_record(rec);
  ASSERT_EQ(q.value()->dispatch(200, nullptr, 0, 0, rec, false, 0, 77), Status::ok);
  EXPECT_EQ(rt->wait(rec, {}), Status::unknown_function);
  collector.stop();
  run_noops(*rt, *q.value(), 5000, 50);  // after: not recorded

  const rt::TraceDump d = collector.dump(false);
  const std::vector<tr::Record> jobs = jobs_of(d);
  ASSERT_EQ(jobs.size(), 300u);
  std::set<uint64_t> tags;
  for (const tr::Record& r : jobs) {
    tags.insert(r.id);
    EXPECT_EQ(r.function, TANDEM_FN_NOP);
    EXPECT_NE(r.slot, tr::kNoSlot);
    EXPECT_EQ(r.status, TANDEM_OK);
    // Every phase the job went through, in order; the ones a no-op always goes through are there.
    for (uint32_t p : {tr::kVisible, tr::kDecoded, tr::kQueued, tr::kStarted, tr::kDeviceDone, tr::kCompleted}) {
      EXPECT_GT(r.t[p], 0) << "phase " << p;
    }
    int64_t last = 0;
    for (uint32_t p = 0; p < tr::kJobPhases; ++p) {
      if (r.t[p] == 0) continue;
      EXPECT_GE(r.t[p], last) << "phase " << p << " of tag " << r.id;
      last = r.t[p];
    }
  }
  EXPECT_EQ(tags.size(), 300u);
  EXPECT_EQ(*tags.begin(), 1000u);
  EXPECT_EQ(*tags.rbegin(), 1299u);
  const auto refused = std::count_if(d.records.begin(), d.records.end(), [](const tr::Record& r) {
    return r.kind == static_cast<uint16_t>(tr::Kind::refused) && r.id == 77 && r.status == TANDEM_UNKNOWN_FUNCTION;
  });
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(d.counters.dropped_full + d.counters.dropped_store, 0u);
}

// A ring nobody drains fills up: the jobs still run at full speed and every record beyond the ring's
// capacity is dropped and counted; a store that is full does the same.
TEST(Trace, FullRingsAndAFullStoreDropAndCountInsteadOfBlocking) {
  auto rt = open_embedded("", client::Mode::hw);
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(256);
  ASSERT_TRUE(q.ok());
  rt::TraceSettings s;
  s.dispatcher_records = 64;
  s.max_records = 1000;
  s.drain_period_ns = 3'600'000'000'000;  // the collector's thread never drains during the run
  rt::TraceCollector collector(s);
  collector.attach(static_cast<client::EmbeddedRuntime&>(*rt).dispatcher());
  collector.start();
  run_noops(*rt, *q.value(), 1, 500);
  // A job's record is written just after its completion record (microseconds): the last one may trail
  // the wait, so the rings are drained only once the dispatcher has surely written it.
  const auto settled = [&](uint64_t records) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rt::TraceCounters c = collector.counters();  // drains
    EXPECT_EQ(c.collected + c.dropped_full, records);
    return c;
  };
  rt::TraceCounters c = settled(500);  // 64 kept, 436 dropped by the full ring
  EXPECT_EQ(c.collected, 64u);
  EXPECT_EQ(c.dropped_full, 436u);
  EXPECT_EQ(c.records, 64u);
  // Drained often enough, the ring loses nothing, but the store holds 1000 only.
  for (int batch = 0; batch < 40; ++batch) {
    run_noops(*rt, *q.value(), 10'000 + batch * 50, 50);
    collector.drain();
  }
  c = settled(2500);
  EXPECT_EQ(c.dropped_full, 436u);
  EXPECT_EQ(c.collected, 64u + 2000u);
  EXPECT_EQ(c.records, 1000u);
  EXPECT_EQ(c.dropped_store, 64u + 2000u - 1000u);
  collector.stop();
}

TEST(Trace, RingWriterDropsWhenFullAndReusesSlotsOnlyOnceRead) {
  rt::OwnedArea area(1, 8, tr::Clock::monotonic);
  tr::RingWriter w(area.view(), 0);
  tr::Record r;
  for (uint64_t i = 0; i < 8; ++i) {
    r.id = i;
    EXPECT_TRUE(w.write(r));
  }
  r.id = 99;
  EXPECT_FALSE(w.write(r));
  EXPECT_EQ(area.view().ring(0).k_dropped, 1u);
  std::vector<tr::Record> out(4);
  uint64_t tail = 0;
  tr::DrainLoss loss;
  // Room for 4 only: the other 4 are lost to the reader and counted, and the ring is free again.
  EXPECT_EQ(tr::drain_ring(area.view(), 0, tail, out.data(), out.size(), loss), 4u);
  EXPECT_EQ(loss.no_room, 4u);
  EXPECT_EQ(out[0].id, 0u);
  EXPECT_EQ(out[3].id, 3u);
  r.id = 100;
  EXPECT_TRUE(w.write(r));
  out.resize(8);
  EXPECT_EQ(tr::drain_ring(area.view(), 0, tail, out.data(), out.size(), loss), 1u);
  EXPECT_EQ(out[0].id, 100u);
  // A head that claims more than the ring holds (a hostile writer) costs only that ring's records.
  area.view().ring(0).k_head = tail + 1'000'000;
  EXPECT_EQ(tr::drain_ring(area.view(), 0, tail, out.data(), out.size(), loss), 8u);
  EXPECT_EQ(loss.corrupt, 1'000'000u - 8u);
}

TEST(Trace, DumpBytesRoundTripAndBadDumpsAreRefused) {
  rt::TraceFile f;
  f.header.daemon_pid = 42;
  f.sessions.push_back({3, 1234});
  tr::DumpSlot slot;
  slot.slot = 1;
  f.slots.push_back(slot);
  tr::Record r;
  r.kind = static_cast<uint16_t>(tr::Kind::job);
  r.id = 7;
  f.records.assign(5, r);
  std::vector<std::byte> bytes(rt::dump_size(f));
  rt::write_dump(f, bytes);
  auto back = rt::parse_dump(bytes);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back.value().header.daemon_pid, 42u);
  EXPECT_EQ(back.value().sessions.size(), 1u);
  EXPECT_EQ(back.value().sessions[0].pid, 1234u);
  EXPECT_EQ(back.value().records.size(), 5u);
  EXPECT_EQ(back.value().records[4].id, 7u);
  // Truncated, or counts that do not fit the bytes, or a wrong magic: a clear error.
  EXPECT_EQ(rt::parse_dump(std::span(bytes).first(bytes.size() - 1)).status(), Status::protocol_error);
  EXPECT_EQ(rt::parse_dump(std::span(bytes).first(10)).status(), Status::protocol_error);
  std::vector<std::byte> bad = bytes;
  bad[0] = std::byte{0};
  EXPECT_EQ(rt::parse_dump(bad).status(), Status::protocol_error);
  bad = bytes;
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(bad.data() + offsetof(tr::DumpHeader, record_count), &huge, sizeof huge);
  EXPECT_EQ(rt::parse_dump(bad).status(), Status::protocol_error);
}

// A dump is a file anyone may hand to `trace export --from`: a device name that is not UTF-8 (or a
// 16-byte name cut inside a character) still gives valid JSON, the bad bytes as U+FFFD.
TEST(Trace, ADeviceNameThatIsNotUtf8StillGivesValidJson) {
  rt::TraceFile f;
  f.header.daemon_pid = 42;
  tr::DumpSlot slot;
  slot.slot = 0;
  const char name[] = "gpu\xff\"\\\xc3\xa9\xe2\x82";  // a bad byte, a quote, a backslash, "é", a cut "€"
  std::memcpy(slot.device_name, name, sizeof name - 1);
  f.slots.push_back(slot);
  const std::string text = client::perfetto_json(f);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  bool found = false;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("name", "") != "thread_name") continue;
    const std::string thread = e["args"]["name"].get<std::string>();
    if (thread.find("gpu") == std::string::npos) continue;
    found = true;
    EXPECT_NE(thread.find("gpu\xef\xbf\xbd\"\\\xc3\xa9\xef\xbf\xbd"), std::string::npos) << thread;
  }
  EXPECT_TRUE(found) << text;
}

}  // namespace
}  // namespace tandem

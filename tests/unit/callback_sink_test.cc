// CallbackSink: the completions a driver's threads hand a device carry their target's slot, and a sink
// whose device ended with callbacks pending outlives it, so that a late callback touches live memory
// (under ASan a freed sink would fail this test).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "abi/atomics.hpp"
#include "devices/callback_sink.hpp"

namespace tandem::devices {
namespace {

TEST(CallbackSink, CompletionsCarryTheirTargetsSlotAndWakeTheDispatcher) {
  auto sink = std::make_unique<CallbackSink>(3, 999);
  const uint32_t word = abi::load_acquire(*sink->inbox().wake_word());
  sink->expect();
  sink->expect();
  EXPECT_EQ(sink->pending(), 2);
  void* second = sink->slot_target(2);
  void* batches = sink->batch_target();
  std::thread driver([&] {
    DeviceCompletion c;
    c.token = 7;
    c.slot = 12345;  // replaced by the target's
    CallbackSink::arrive(second, c);
    c.token = 8;
    CallbackSink::arrive(batches, c);
  });
  driver.join();
  EXPECT_EQ(sink->pending(), 0);
  EXPECT_NE(abi::load_acquire(*sink->inbox().wake_word()), word);
  std::vector<DeviceCompletion> got;
  sink->inbox().take(got);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].token, 7u);
  EXPECT_EQ(got[0].slot, 2u);
  EXPECT_EQ(got[1].token, 8u);
  EXPECT_EQ(got[1].slot, 999u);
  CallbackSink::retire(std::move(sink));  // nothing pending: freed
}

TEST(CallbackSink, ASinkWithACallbackStillPendingOutlivesItsDevice) {
  void* target = nullptr;
  {
    auto sink = std::make_unique<CallbackSink>(2, 999);
    sink->expect();  // a callback registered that has not come when its device ends
    target = sink->slot_target(1);
    CallbackSink::retire(std::move(sink));
    EXPECT_EQ(sink, nullptr);
  }
  DeviceCompletion late;
  late.token = 9;
  CallbackSink::arrive(target, late);  // the late callback: the sink is still there
}

}  // namespace
}  // namespace tandem::devices

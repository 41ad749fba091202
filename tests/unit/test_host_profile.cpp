// The debug host profile's parts and lines (hooks/host_profile.hpp).
#include "host_profile.hpp"

#include <gtest/gtest.h>

namespace nanscope {
namespace {

using Part = HostProfile::Part;

TEST(HostProfile, SlowCallsAreCountedApartInEachPart) {
  HostProfile p;
  p.on = true;
  p.exit.add(30'000);
  p.exit.add(50'000);
  p.exit.add(2'000'000);  // a first sight
  p.part(Part::kernel_lookup).add(1'000);
  p.part(Part::kernel_lookup).add(3'000);
  p.part(Part::kernel_lookup).add(900'000);
  p.part(Part::opaque_python).add(25'000);
  p.part(Part::enter_model).add(11'500);
  const std::vector<std::string> lines = p.lines();
  ASSERT_EQ(lines.size(), 3u);  // the enter site never ran: not said
  EXPECT_EQ(lines[0], "launch exit site, all of it: 40.00 us each (2), plus 1 over 100 us taking 2.0 ms");
  EXPECT_EQ(lines[1],
            "exit site parts: kernel lookup 2.00 us each (2), plus 1 over 100 us taking 0.9 ms; "
            "opaque Python line 25.00 us each (1)");
  EXPECT_EQ(lines[2], "enter site parts: write model 11.50 us each (1)");
}

TEST(HostProfile, OffSaysNothingAndReadsNoClock) {
  HostProfile p;
  p.part(Part::build).add(5'000);
  EXPECT_TRUE(p.lines().empty());
  PartClock clock(p);  // off: laps add nothing
  clock.lap(Part::submit);
  EXPECT_EQ(p.part(Part::submit).calls.load(), 0u);
}

TEST(HostProfile, LapsGoToTheirParts) {
  HostProfile p;
  p.on = true;
  PartClock clock(p);
  clock.lap(Part::torch_watch);
  clock.skip();
  clock.lap(Part::build);
  clock.lap(Part::build);
  EXPECT_EQ(p.part(Part::torch_watch).calls.load(), 1u);
  EXPECT_EQ(p.part(Part::build).calls.load(), 2u);
  EXPECT_EQ(p.part(Part::submit).calls.load(), 0u);
}

}  // namespace
}  // namespace nanscope

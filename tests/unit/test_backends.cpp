// The backend registry (src/net/registry.hpp) through the public attribute
// `backend`: what auto picks on one node, and the error for a backend this
// build does not have, which names the backends it has. Built in both kinds
// of build: with the ofi backend (LCI_TEST_HAVE_OFI 1) and without it.
#include "lci_test_common.hpp"

namespace
{

using lci_test::env_guard_t;
using lci_test::fatal_message;
using ::testing::HasSubstr;

// the attribute and its variable agree (the unit tests pin the variable)
lci::runtime_t runtime_on(const char* backend)
{
  env_guard_t pin("LCI_ATTR_BACKEND", backend);
  return lci::alloc_runtime_x().backend(backend)();
}

TEST(Backends, AutoOnOneNodeIsNativeShm)
{
  lci::runtime_t rt = runtime_on("auto");
  EXPECT_EQ(rt.get_attr_backend(), "shm");
  lci_test::expect_sendrecv_works(rt, lci::device_t(), 77, 64);
  lci::free_runtime(&rt);
}

TEST(Backends, ShmIsAlwaysBuiltIn)
{
  lci::runtime_t rt = runtime_on("shm");
  EXPECT_EQ(rt.get_attr_backend(), "shm");
  lci::free_runtime(&rt);
}

// the native socket backend needs no library: in every build; one rank
// talks to itself through it (in memory)
TEST(Backends, SocketIsAlwaysBuiltIn)
{
  lci::runtime_t rt = runtime_on("socket");
  EXPECT_EQ(rt.get_attr_backend(), "socket");
  lci_test::expect_sendrecv_works(rt, lci::device_t(), 79, 64);
  lci::free_runtime(&rt);
}

// The socket backend's two settings from the environment: a value in
// range runs, anything else refuses the runtime naming the variable.
TEST(Backends, SocketSettingsFromTheEnvironment)
{
  {
    env_guard_t chunk("LCI_SOCKET_RECV_CHUNK", "4096");
    env_guard_t wait("LCI_SOCKET_WAIT_US", "0");
    lci::runtime_t rt = runtime_on("socket");
    lci_test::expect_sendrecv_works(rt, lci::device_t(), 80, 1024);
    lci::free_runtime(&rt);
  }
  for (const char* bad : {"abc", "100", "-4096", "2147483648", "64k"}) {
    env_guard_t chunk("LCI_SOCKET_RECV_CHUNK", bad);
    const std::string msg = fatal_message([] { runtime_on("socket"); });
    EXPECT_THAT(msg, HasSubstr(std::string("LCI_SOCKET_RECV_CHUNK '") + bad +
                               "' is not a number of bytes from 4096"));
  }
  for (const char* bad : {"x", "1000001", "-1"}) {
    env_guard_t wait("LCI_SOCKET_WAIT_US", bad);
    const std::string msg = fatal_message([] { runtime_on("socket"); });
    EXPECT_THAT(msg, HasSubstr(std::string("LCI_SOCKET_WAIT_US '") + bad +
                               "' is not a number of microseconds"));
  }
}

#if LCI_TEST_HAVE_OFI

TEST(Backends, OfiAndHybridAreBuiltIn)
{
  for (const char* name : {"ofi", "hybrid"}) {
    lci::runtime_t rt = runtime_on(name);
    EXPECT_EQ(rt.get_attr_backend(), name);
    lci_test::expect_sendrecv_works(rt, lci::device_t(), 78, 64);
    lci::free_runtime(&rt);
  }
}

#else

// The names this build lacks give an error naming the option it was built
// with and the backends it has, not an unknown-backend message.
TEST(Backends, OfiIsNotInThisBuild)
{
  const std::string msg = fatal_message([] { runtime_on("ofi"); });
  EXPECT_THAT(msg, HasSubstr("alloc_runtime: backend 'ofi' is not in this "
                             "build (built with LCI_WITH_OFI=OFF); built "
                             "in: shm, socket, hybrid"));
}

// hybrid is there (its network side is the socket backend); its ofi
// route is not
TEST(Backends, HybridRunsOnSocketWithoutOfi)
{
  lci::runtime_t rt = runtime_on("hybrid");
  EXPECT_EQ(rt.get_attr_backend(), "hybrid");
  lci_test::expect_sendrecv_works(rt, lci::device_t(), 78, 64);
  lci::free_runtime(&rt);
  env_guard_t remote("LCI_ATTR_NET_REMOTE", "ofi");
  const std::string msg = fatal_message([] { runtime_on("hybrid"); });
  EXPECT_THAT(msg, HasSubstr("net_remote 'ofi' is not in this build"));
}

#endif

}  // namespace

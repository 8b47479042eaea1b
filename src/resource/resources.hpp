// Every resource implementation, for code that needs them all (the generated
// attribute getters). Each header stands alone.
#ifndef LCI_RESOURCE_RESOURCES_HPP
#define LCI_RESOURCE_RESOURCES_HPP

#include "resource/device.hpp"
#include "resource/matching_engine.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"

#endif  // LCI_RESOURCE_RESOURCES_HPP

// What moving a call's data costs this machine's CPU (model::HostAccessCosts: a copy's rate, and
// gathering a process's pages with process_vm_readv), measured once per process on first use, about
// 8 ms. tandemd measures them at start and tells each client in its hello (abi/control.hpp, HostEntry):
// a client on the same machine then need not measure them again.
#pragma once

#include "model/access_model.hpp"

namespace tandem::rt {

const model::HostAccessCosts& host_access_costs();

}  // namespace tandem::rt

// Marks the nccl* entry points we interpose as exported; everything else in the library is hidden
// (-fvisibility=hidden plus exports.map), so our internals never clash with the host's symbols.
#pragma once

#define NCCLSCOPE_API extern "C" __attribute__((visibility("default")))

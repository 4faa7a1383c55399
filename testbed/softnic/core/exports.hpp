// Marks a function as part of the exported ABI (the .map files list what is public).
#pragma once
#define SOFTNIC_EXPORT extern "C" __attribute__((visibility("default")))

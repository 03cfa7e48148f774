// Embeds a fatbin nvcc wrote into the including object's read-only data, 16-byte aligned as
// cuModuleLoadData wants it, between the hidden symbols ncclscope_<name>_fatbin_begin and _end:
// one definition for each kernel source's image (device_code.cpp,
// numerics/numerics_fatbin.cpp, moe/moe_fatbin.cpp). Use at file
// scope, once per name, with the path as a string literal (the build's NCCLSCOPE_<NAME>_FATBIN).
#pragma once

#define NCCLSCOPE_EMBED_FATBIN(name, path)                          \
  asm(".section .rodata\n"                                          \
      ".balign 16\n"                                                \
      ".global ncclscope_" #name                                    \
      "_fatbin_begin\n"                                             \
      ".hidden ncclscope_" #name                                    \
      "_fatbin_begin\n"                                             \
      ".global ncclscope_" #name                                    \
      "_fatbin_end\n"                                               \
      ".hidden ncclscope_" #name                                    \
      "_fatbin_end\n"                                               \
      "ncclscope_" #name                                            \
      "_fatbin_begin:\n"                                            \
      ".incbin \"" path                                             \
      "\"\n"                                                        \
      "ncclscope_" #name                                            \
      "_fatbin_end:\n"                                              \
      ".previous\n");                                               \
  extern "C" const unsigned char ncclscope_##name##_fatbin_begin[]; \
  extern "C" const unsigned char ncclscope_##name##_fatbin_end[];

# ctest config_doc_is_current: docs/config.md must equal what ncclscope_config_doc prints now.
execute_process(COMMAND ${DOC_TOOL} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${DOC_TOOL} failed (${rc})")
endif()
file(READ ${DOC_FILE} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "docs/config.md is out of date with plugin/core/config_table.h. Regenerate it with:\n"
                      "  cmake --build build --target ncclscope_config_doc && "
                      "build/bin/ncclscope_config_doc > docs/config.md")
endif()

# Precompiled headers: the standard library's (and, for the tests, GoogleTest's) headers parsed once per
# target instead of once per source file, which saves about a third of a build on a 2-core machine.
# -DSCALEBENCH_PCH=OFF builds without them (to check that every file includes what it uses).
option(SCALEBENCH_PCH "Precompile the standard library's and GoogleTest's headers" ON)

set(sb_pch_std_headers <algorithm> <array> <cmath> <cstdint> <cstring> <functional> <map> <memory> <mutex>
                       <optional> <sstream> <stdexcept> <string> <string_view> <thread> <unordered_map> <utility>
                       <vector>)

# A library of src/ (C++ sources; nvcc takes no precompiled header): its own precompiled standard headers (the libraries' flags differ, so none is shared).
function(scalebench_precompile target)
  if(SCALEBENCH_PCH)
    target_precompile_headers(${target} PRIVATE ${sb_pch_std_headers})
  endif()
endfunction()

# A test program: GoogleTest and the standard headers, precompiled once by the first program of its `family`
# (programs of one family have the same flags) and reused by the others.
function(scalebench_precompile_test target family)
  if(NOT SCALEBENCH_PCH)
    return()
  endif()
  get_property(donor GLOBAL PROPERTY sb_pch_donor_${family})
  if(donor)
    target_precompile_headers(${target} REUSE_FROM ${donor})
  else()
    target_precompile_headers(${target} PRIVATE <gtest/gtest.h> ${sb_pch_std_headers})
    set_property(GLOBAL PROPERTY sb_pch_donor_${family} ${target})
  endif()
endfunction()

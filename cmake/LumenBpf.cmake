# cmake/LumenBpf.cmake - building eBPF objects: clang -target bpf with CO-RE
# against a vmlinux.h, and a libbpf skeleton per object (bpftool gen
# skeleton). Used by bpf/ (lumen's programs) and tests/ (test-only programs).
#
#   include(LumenBpf)
#   lumen_bpf_object(NAME <name> SOURCE <file.bpf.c> [NO_SKELETON] [DEPENDS files...])
#     <name>.bpf.o in ${LUMEN_BPF_GEN}; unless NO_SKELETON also
#     <name>.skel.h and the INTERFACE library lumen_bpf_<name> (include
#     directory + libbpf) that C++ code links to use the skeleton. Without
#     a skeleton the target lumen_bpf_<name>_obj builds the object (loaded
#     by tc or bpftool from its path).
#
# Cache variables:
#   LUMEN_BPF_CLANG     clang that targets BPF (>= LUMEN_BPF_CLANG_MIN)
#   LUMEN_BPFTOOL       bpftool (gen skeleton, btf dump)
#   LUMEN_VMLINUX_H     a vmlinux.h to use as is (for build hosts without
#                       kernel BTF, e.g. a container or a distribution build);
#                       empty: generate one from LUMEN_VMLINUX_BTF
#   LUMEN_VMLINUX_BTF   the BTF to generate it from (default: the running
#                       kernel's /sys/kernel/btf/vmlinux)
#
# -Werror only with LUMEN_WERROR: the user's clang and the vmlinux.h of the
# user's kernel may warn where CI's do not.
include_guard(GLOBAL)

set(LUMEN_BPF_CLANG_MIN 12) # BTF for struct_ops and CO-RE relocations as libbpf 1.1 expects
find_program(LUMEN_BPF_CLANG NAMES clang clang-16 clang-15 clang-14 clang-13 REQUIRED)
find_program(LUMEN_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
execute_process(COMMAND ${LUMEN_BPF_CLANG} -dumpversion OUTPUT_VARIABLE _lumen_clang_version
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _lumen_clang_rc)
if(NOT _lumen_clang_rc EQUAL 0 OR _lumen_clang_version VERSION_LESS LUMEN_BPF_CLANG_MIN)
  message(FATAL_ERROR "${LUMEN_BPF_CLANG} (version '${_lumen_clang_version}') cannot build lumen's eBPF objects: "
                      "clang >= ${LUMEN_BPF_CLANG_MIN} is needed (Debian: apt install clang; or "
                      "-DLUMEN_BPF_CLANG=/path/to/clang)")
endif()

set(LUMEN_VMLINUX_H "" CACHE FILEPATH "vmlinux.h to use instead of generating one from LUMEN_VMLINUX_BTF")
set(LUMEN_VMLINUX_BTF /sys/kernel/btf/vmlinux CACHE FILEPATH "BTF used to generate vmlinux.h")
set(LUMEN_BPF_GEN ${PROJECT_BINARY_DIR}/bpf/gen)
file(MAKE_DIRECTORY ${LUMEN_BPF_GEN})

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(LUMEN_BPF_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(LUMEN_BPF_ARCH arm64)
else()
  set(LUMEN_BPF_ARCH ${CMAKE_SYSTEM_PROCESSOR})
endif()

# One target owns vmlinux.h (written to a temporary file, then renamed): if
# several object targets listed the command, parallel builds would run it
# concurrently and a compiler could read a half-written header.
if(LUMEN_VMLINUX_H)
  if(NOT EXISTS ${LUMEN_VMLINUX_H})
    message(FATAL_ERROR "LUMEN_VMLINUX_H=${LUMEN_VMLINUX_H} does not exist")
  endif()
  add_custom_command(
    OUTPUT ${LUMEN_BPF_GEN}/vmlinux.h
    COMMAND ${CMAKE_COMMAND} -E copy ${LUMEN_VMLINUX_H} ${LUMEN_BPF_GEN}/vmlinux.h
    DEPENDS ${LUMEN_VMLINUX_H}
    COMMENT "Using ${LUMEN_VMLINUX_H} as vmlinux.h"
    VERBATIM)
else()
  if(NOT EXISTS ${LUMEN_VMLINUX_BTF})
    message(FATAL_ERROR "no kernel BTF at ${LUMEN_VMLINUX_BTF} to generate vmlinux.h from: pass "
                        "-DLUMEN_VMLINUX_H=<a vmlinux.h> or -DLUMEN_VMLINUX_BTF=<a BTF file>")
  endif()
  add_custom_command(
    OUTPUT ${LUMEN_BPF_GEN}/vmlinux.h
    COMMAND ${LUMEN_BPFTOOL} btf dump file ${LUMEN_VMLINUX_BTF} format c > ${LUMEN_BPF_GEN}/vmlinux.h.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${LUMEN_BPF_GEN}/vmlinux.h.tmp ${LUMEN_BPF_GEN}/vmlinux.h
    COMMENT "Generating vmlinux.h from ${LUMEN_VMLINUX_BTF}"
    VERBATIM)
endif()
add_custom_target(lumen_bpf_vmlinux DEPENDS ${LUMEN_BPF_GEN}/vmlinux.h)

file(GLOB LUMEN_SHARED_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/lumen/*.h)

function(lumen_bpf_object)
  cmake_parse_arguments(B "NO_SKELETON" "NAME;SOURCE" "DEPENDS" ${ARGN})
  if(NOT B_NAME OR NOT B_SOURCE)
    message(FATAL_ERROR "lumen_bpf_object: NAME and SOURCE are required")
  endif()
  get_filename_component(src ${B_SOURCE} ABSOLUTE)
  get_filename_component(src_dir ${src} DIRECTORY)
  set(obj ${LUMEN_BPF_GEN}/${B_NAME}.bpf.o)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${LUMEN_BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${LUMEN_BPF_ARCH} -Wall -Wextra
            ${LUMEN_WERROR_FLAGS} -Wno-unused-parameter -I${LUMEN_BPF_GEN} -I${PROJECT_SOURCE_DIR}/include
            -I${PROJECT_SOURCE_DIR}/bpf -I${src_dir} -c ${src} -o ${obj}
    DEPENDS ${src} ${LUMEN_BPF_GEN}/vmlinux.h ${LUMEN_SHARED_HEADERS} ${PROJECT_SOURCE_DIR}/bpf/lumen_bpf.h
            ${B_DEPENDS}
    COMMENT "BPF ${B_NAME}.bpf.c"
    VERBATIM)
  if(B_NO_SKELETON)
    add_custom_target(lumen_bpf_${B_NAME}_obj ALL DEPENDS ${obj})
    add_dependencies(lumen_bpf_${B_NAME}_obj lumen_bpf_vmlinux)
    return()
  endif()
  set(skel ${LUMEN_BPF_GEN}/${B_NAME}.skel.h)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${LUMEN_BPFTOOL} gen skeleton ${obj} name ${B_NAME} > ${skel}
    DEPENDS ${obj}
    COMMENT "Skeleton ${B_NAME}.skel.h"
    VERBATIM)
  add_custom_target(lumen_bpf_${B_NAME}_gen DEPENDS ${skel})
  add_dependencies(lumen_bpf_${B_NAME}_gen lumen_bpf_vmlinux)
  add_library(lumen_bpf_${B_NAME} INTERFACE)
  add_dependencies(lumen_bpf_${B_NAME} lumen_bpf_${B_NAME}_gen)
  target_include_directories(lumen_bpf_${B_NAME} INTERFACE ${LUMEN_BPF_GEN})
  target_link_libraries(lumen_bpf_${B_NAME} INTERFACE PkgConfig::LIBBPF)
endfunction()

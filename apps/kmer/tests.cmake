# Tests of apps/kmer (label kmer), driven by test_kmer.sh: the velvet reads
# (Debian velvet-tests, 50,000 reads of 79 bases) through 1, 2 and 4 ranks
# x 1 to 4 threads and three aggregation sizes give the histogram of the
# serial count (serial_count.py, a plain dict); so do plain and gzipped
# FASTQ, FASTA, multi-line FASTA, k = 17 and 63 and the MPI reference;
# malformed inputs end every rank with an error naming file and line.
set(kmer_sh sh ${CMAKE_CURRENT_SOURCE_DIR}/test_kmer.sh)
set(kmer_data ${CMAKE_CURRENT_BINARY_DIR}/data)
set(velvet /usr/share/doc/velvet/tests)
set(kmer_lcrun $<TARGET_FILE:lcrun>)
set(kmer_bin $<TARGET_FILE:kmer>)
set(kmer_env "FI_TCP_IFACE=lo;FI_SOCKETS_IFACE=lo;HFI_NO_BACKTRACE=1;IPATH_NO_BACKTRACE=1")

add_test(NAME kmer.data COMMAND ${kmer_sh} data ${kmer_data})
set_tests_properties(kmer.data PROPERTIES LABELS kmer TIMEOUT 60
                     FIXTURES_SETUP kmer_data)
# the serial counts (python: a few seconds of one core each)
foreach(ref "31;reads31;${velvet}/reads.fq.gz"
            "17;read1_17;${velvet}/read1.fq.gz"
            "63;read1_63;${velvet}/read1.fq.gz")
  list(GET ref 0 k)
  list(GET ref 1 name)
  list(GET ref 2 file)
  add_test(NAME kmer.ref_${name}
           COMMAND ${kmer_sh} ref ${kmer_data} ${k} ${name} ${file})
  set_tests_properties(kmer.ref_${name} PROPERTIES LABELS kmer TIMEOUT 300
                       FIXTURES_REQUIRED kmer_data FIXTURES_SETUP kmer_ref)
endforeach()

# the wire format of every k, byte by byte
add_executable(kmer_test_wire test_wire.cpp)
target_link_libraries(kmer_test_wire PRIVATE kmer_common)
add_test(NAME kmer.wire COMMAND kmer_test_wire)
set_tests_properties(kmer.wire PROPERTIES LABELS kmer TIMEOUT 60)

# kmer_test(NAME RUN_ARGS...): test_kmer.sh run RUN_ARGS
function(kmer_test name)
  add_test(NAME kmer.${name} COMMAND ${kmer_sh} run ${ARGN})
  set_tests_properties(kmer.${name} PROPERTIES
    LABELS kmer TIMEOUT 180 SKIP_RETURN_CODE 77
    FIXTURES_REQUIRED "kmer_data;kmer_ref" ENVIRONMENT "${kmer_env}")
endfunction()

# Under a sanitizer (the asan stage of scripts/test.sh) a subset: 2 and 4
# ranks x 2 threads, --no-bloom and the malformed inputs run the same code
# paths as the rest, at sanitizer speed.
set(kmer_full ON)
if(LCI_SANITIZE)
  set(kmer_full OFF)
endif()

# ranks x threads x aggregation, gzipped and plain FASTQ; 3 and 4 threads:
# k-mers handed between several owner threads of a rank
set(ref31 ${kmer_data}/reads31.histo)
# (read1 and read2 together are the reads of reads.fq.gz)
set(halves ${velvet}/read1.fq.gz ${velvet}/read2.fq.gz)
foreach(run "1;1;8K;${velvet}/reads.fq.gz" "1;2;64K;${kmer_data}/reads.fq"
            "1;4;8K;${velvet}/reads.fq.gz"
            "2;1;1K;${halves}" "2;2;8K;${kmer_data}/reads.fq"
            "2;3;1K;${halves}"
            "4;1;64K;${velvet}/reads.fq.gz" "4;2;1K;${velvet}/reads.fq.gz")
  list(POP_FRONT run n t agg)
  list(GET run 0 need)
  if(NOT kmer_full AND (n EQUAL 1 OR t EQUAL 1))
    continue()
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/n${n}_t${t}.histo)
  kmer_test(lci_n${n}_t${t} --need ${need} --histo ${out} ${ref31} 2
    -- ${kmer_lcrun} -n ${n} --timeout 150
    ${kmer_bin} -k 31 -t ${t} --agg ${agg} --histo ${out} ${run})
endforeach()
if(kmer_full)
  # the same through libfabric's tcp provider instead of the native shared
  # memory that LCI picks on one node
  kmer_test(lci_ofi_tcp_n2_t2 --need ${velvet}/reads.fq.gz
    --histo ${CMAKE_CURRENT_BINARY_DIR}/tcp.histo ${ref31} 2
    -- ${kmer_lcrun} -n 2 --timeout 150 ${kmer_bin} -k 31 -t 2 --agg 8K
    --histo ${CMAKE_CURRENT_BINARY_DIR}/tcp.histo ${velvet}/reads.fq.gz)
  set_property(TEST kmer.lci_ofi_tcp_n2_t2 APPEND PROPERTY ENVIRONMENT
               LCI_ATTR_BACKEND=ofi LCI_ATTR_OFI_PROVIDER_NAME=tcp)
  # FASTA (one line a read) and multi-line FASTA (velvet's Sequences file, 60
  # bases a line) hold the same reads
  kmer_test(lci_fasta_n2_t2 --need ${velvet}/reads.fa.gz
    --histo ${CMAKE_CURRENT_BINARY_DIR}/fasta.histo ${ref31} 2
    -- ${kmer_lcrun} -n 2 --timeout 150 ${kmer_bin} -k 31 -t 2
    --histo ${CMAKE_CURRENT_BINARY_DIR}/fasta.histo ${velvet}/reads.fa.gz)
  kmer_test(lci_multiline_fasta_n2_t1 --need ${velvet}/Sequences.31.gz
    --histo ${CMAKE_CURRENT_BINARY_DIR}/multiline.histo ${ref31} 2
    -- ${kmer_lcrun} -n 2 --timeout 150 ${kmer_bin} -k 31
    --histo ${CMAKE_CURRENT_BINARY_DIR}/multiline.histo ${velvet}/Sequences.31.gz)
endif()
# without the Bloom filter every row is exact, count 1 included; --output
# holds every k-mer with its count
kmer_test(lci_nobloom_output_n2_t2 --need ${velvet}/read1.fq.gz
  --histo ${CMAKE_CURRENT_BINARY_DIR}/nobloom.histo
  ${kmer_data}/read1_17.histo 1
  --check-output ${CMAKE_CURRENT_BINARY_DIR}/nobloom.txt 17 1
  ${velvet}/read1.fq.gz
  -- ${kmer_lcrun} -n 2 --timeout 150 ${kmer_bin} -k 17 -t 2 --no-bloom
  --histo ${CMAKE_CURRENT_BINARY_DIR}/nobloom.histo
  --output ${CMAKE_CURRENT_BINARY_DIR}/nobloom.txt ${velvet}/read1.fq.gz)
if(kmer_full)
  # k = 17 (5 bytes a k-mer on the wire) and k = 63 (16 bytes)
  foreach(k 17 63)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/k${k}.histo)
    kmer_test(lci_k${k}_n2_t2 --need ${velvet}/read1.fq.gz
      --histo ${out} ${kmer_data}/read1_${k}.histo 2
      -- ${kmer_lcrun} -n 2 --timeout 150 ${kmer_bin} -k ${k} -t 2 --agg 2K
      --histo ${out} ${velvet}/read1.fq.gz)
  endforeach()
  # --plot draws a PNG (skipped without matplotlib)
  add_test(NAME kmer.plot COMMAND sh -c
    "/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || exit 77; \
     rm -f \"$0\" && \"$1\" -k 31 --plot \"$0\" \"$2\" >/dev/null && \
     head -c 8 \"$0\" | od -c | grep -q 'P   N   G' && rm -f \"$0\""
    ${CMAKE_CURRENT_BINARY_DIR}/plot.png ${kmer_bin} ${velvet}/read1.fq.gz)
  set_tests_properties(kmer.plot PROPERTIES LABELS kmer TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endif()

# malformed input: the first error in input order, named by file and line,
# printed once; every rank exits non-zero (the other rank says it stops)
set(stop "stopping: input error reported by rank")
foreach(bad
    "truncated;truncated.fq;truncated.fq:4001: truncated FASTQ record"
    "badchar;badchar.fq;badchar.fq:2002: bad character '7' in a sequence \\(column 10\\)"
    "badqual;badqual.fq;badqual.fq:44: quality '#' \\(column 1\\) out of range for offset 64"
    "cutgz;cut.fq.gz;cut.fq.gz:[0-9]+: truncated gzip file"
    "empty;empty.fq;empty.fq: empty file"
    "missing;missing.fq;missing.fq: cannot open: No such file or directory")
  list(GET bad 0 name)
  list(GET bad 1 file)
  list(GET bad 2 regex)
  kmer_test(lci_error_${name} --need ${kmer_data}/reads.fq --fail "${regex}"
    --lines "kmer: .*${file}" 1 --lines "${stop}" 1
    -- ${kmer_lcrun} -n 2 --timeout 60 ${kmer_bin} -k 31 -t 2
    --qual-offset 64 ${kmer_data}/reads.fq ${kmer_data}/${file})
endforeach()
# bad options: a usage message, exit status 2, on rank 0 only
kmer_test(lci_bad_option --need ${kmer_bin}
  --fail "kmer: -k must be 1 to 63, not '64'" --lines "^usage:" 1
  -- ${kmer_lcrun} -n 2 --timeout 60 ${kmer_bin} -k 64 x.fq)

# The MPI reference, 2 processes, under its own launcher (in a private
# loopback-only network namespace: the launchers listen on every interface)
set(netns ${PROJECT_SOURCE_DIR}/tools/lo-netns)
set(kmer_launch_mpich ${netns} /usr/bin/mpiexec.hydra -launcher fork -iface lo -n 2)
set(kmer_launch_openmpi ${netns} /usr/bin/mpirun.openmpi --allow-run-as-root
    --oversubscribe --bind-to none --mca oob_tcp_if_include lo -n 2)
# (the library find_package(MPI) found: its mpiexec, which may be Open
# MPI's, refusing root unless told)
set(kmer_launch_mpi env OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ${netns} ${MPIEXEC_EXECUTABLE} -n 2)
foreach(flavor IN LISTS kmer_mpi_flavors)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/mpi_${flavor}.histo)
  kmer_test(mpi_${flavor}_n2 --need ${velvet}/reads.fq.gz
    --histo ${out} ${ref31} 2
    -- ${kmer_launch_${flavor}} $<TARGET_FILE:kmer_mpi_${flavor}>
    -k 31 --agg 8K --histo ${out} ${velvet}/reads.fq.gz)
  kmer_test(mpi_${flavor}_error_n2 --need ${kmer_data}/reads.fq
    --fail "badchar.fq:2002: bad character '7'" --lines "${stop}" 1
    -- ${kmer_launch_${flavor}} $<TARGET_FILE:kmer_mpi_${flavor}>
    -k 31 ${kmer_data}/reads.fq ${kmer_data}/badchar.fq)
endforeach()

# Across hosts (the multi-host fixture of tests/multihost, label
# multihost): 2 hosts x 2 ranks x 2 threads under hydra, so k-mers cross
# both native shared memory (ranks of one host) and libfabric tcp between
# the hosts; the histogram must equal the serial count.
if(TARGET mh_host_failure AND kmer_full)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/hosts_2x2.histo)
  add_test(NAME kmer.hosts_hydra_2x2 COMMAND ${kmer_sh} run
    --need ${velvet}/reads.fq.gz --histo ${out} ${ref31} 2 --timeout 200
    -- sh ${PROJECT_SOURCE_DIR}/tests/multihost/run.sh
    ${PROJECT_BINARY_DIR}/tests/multihost/hosts hydra 2 2
    ${kmer_bin} -k 31 -t 2 --agg 8K --histo ${out} ${velvet}/reads.fq.gz)
  set_tests_properties(kmer.hosts_hydra_2x2 PROPERTIES
    LABELS "kmer;multihost" TIMEOUT 240 SKIP_RETURN_CODE 77
    FIXTURES_REQUIRED "kmer_data;kmer_ref;multihost_hosts"
    RESOURCE_LOCK multihost ENVIRONMENT "LCI_MULTIHOST_TIMEOUT=180")
endif()

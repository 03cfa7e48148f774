// The one table of every NCCLSCOPE_* environment variable. The parser, the Config struct and the
// generated docs/config.md all expand this list, so a variable cannot exist in one and not the
// others.
#pragma once

// X(field, kind, default, constraint, doc)
//   kind:       Bool, Int, Size, String or Enum
//   default:    text, parsed by the same parser as user values (a unit test checks each one)
//   constraint: "min..max" for Int and Size, "a|b|c" for Enum, "" otherwise
#define NCCLSCOPE_CONFIG_TABLE(X)                                                                  \
  X(enable, Bool, "1", "",                                                                         \
    "Record NCCL calls. 0 makes the library a pure pass-through (one branch per call).")           \
  X(dir, String, "", "",                                                                           \
    "Exact directory of the ring files (wins over the layout below). Empty: "                      \
    "<base>/<job id>/<host>, one directory per job and node.")                                     \
  X(base_dir, String, "", "",                                                                      \
    "Base of the default layout <base>/<job id>/<host>. Empty: ${TMPDIR:-/tmp}/ncclscope-<uid>, "  \
    "created private.")                                                                            \
  X(job_id, String, "", "",                                                                        \
    "Job id in the ring header and the default directory. Empty: SLURM_JOB_ID[.SLURM_STEP_ID], "   \
    "else TORCHELASTIC_RUN_ID (not torchrun's default 'none'), else local. On Kubernetes set it "  \
    "from the downward API.")                                                                      \
  X(host, String, "", "",                                                                          \
    "Node name in the ring header, the file name and the default directory (a pod's host name "    \
    "is not its node's). Empty: the host name.")                                                   \
  X(ring_records, Size, "65536", "64..67108864",                                                   \
    "Record slots of the ring file (128 bytes each), rounded up to a power of two.")               \
  X(comm_capacity, Int, "256", "1..65536",                                                         \
    "Communicator table entries in the ring file; later communicators are counted as dropped.")    \
  X(track_completion, Bool, "1", "",                                                               \
    "Record a CUDA event after each collective and send/recv to time its device completion.")      \
  X(completion_poll_us, Int, "200", "10..1000000",                                                 \
    "Poll interval of the completion thread while device work is outstanding, microseconds.")      \
  X(event_pool, Int, "1024", "1..65536",                                                           \
    "CUDA events in the completion pool; calls beyond it are counted as untracked.")               \
  X(heartbeat_ms, Int, "100", "1..60000",                                                          \
    "Interval of the heartbeat written into the ring header, milliseconds.")                       \
  X(cuda_library, String, "libcuda.so.1", "",                                                      \
    "CUDA driver library opened (dlopen) for completion tracking.")                                \
  X(cupti, String, "", "",                                                                         \
    "1: CUPTI kernel activity (libcupti.so.13, opened by the background thread) records each "     \
    "NCCL kernel's GPU compute time since the previous one; a path opens that library instead. "   \
    "Empty or 0: off. Without a GPU or driver: one warning, nothing else.")                        \
  X(presence, Bool, "1", "",                                                                       \
    "When the launcher names this process's rank and job size (RANK and WORLD_SIZE, Open MPI's, "  \
    "Slurm's or PMI's), write a small presence file into the trace directory as the library "      \
    "loads, so a rank that never calls NCCL is seen (and named when the others wait for it in a "  \
    "communicator's creation); its first NCCL call replaces it with the ring file.")               \
  X(fork, Enum, "reinit", "reinit|off",                                                            \
    "In a forked child: reinit opens a new ring file at its first NCCL call, off stops "           \
    "recording.")                                                                                  \
  X(warn, Bool, "1", "", "Print warning lines (prefix 'ncclscope: warning: ') on stderr.")         \
  X(nvtx, Bool, "1", "",                                                                           \
    "When loaded as the NVTX injection (NVTX_INJECTION64_PATH, set by `ncclscope run`): record "   \
    "each thread's NVTX ranges so records carry their training step and phase. 0: forward only.")  \
  X(nvtx_step_pattern, String, "step %d;Step %d;STEP %d;iteration %d;Iteration %d;iter %d", "",    \
    "NVTX range names that mark a training step: ';'-separated alternatives, each with one %d "    \
    "where the step number stands. A bad pattern warns once and the default is used.")             \
  X(nvtx_forward, String, "", "",                                                                  \
    "Another NVTX injection library (Nsight Systems') to pass every NVTX call on to; `ncclscope "  \
    "run` sets it to the NVTX_INJECTION64_PATH the job had. Empty: none.")                         \
  X(watchdog, Bool, "1", "",                                                                       \
    "Watch for local stalls on the background thread and, on one, correlate the trace directory "  \
    "and write verdict.json there (once per incident across ranks).")                              \
  X(stall_floor_ms, Int, "5000", "100..86400000",                                                  \
    "Stall rule floor: an operation class with work in flight and no completion for "              \
    "max(floor, factor x its p99 latency) is stalled, milliseconds.")                              \
  X(stall_p99_factor, Int, "10", "1..100000",                                                      \
    "Stall rule factor k: T = max(floor, k x the observed p99 latency of the operation class).")   \
  X(confirm_floor_ms, Int, "60000", "100..86400000",                                               \
    "A stall whose culprit is not shown stuck (busy outside NCCL, an operation every member "      \
    "runs) stays a suspect, reported and never acted on, until it lasts max(floor, factor x the "  \
    "longest pause the job has shown), at most the ceiling; milliseconds.")                        \
  X(confirm_factor, Int, "3", "1..1000",                                                           \
    "Confirmation factor: a suspect becomes a hang after this many times the longest pause "       \
    "(between two operations of a rank, or inside one) the job's traces show.")                    \
  X(confirm_ceiling_ms, Int, "600000", "100..604800000",                                           \
    "Confirmation ceiling: a suspect is a hang after this long whatever the job has shown, "       \
    "milliseconds (PyTorch's default NCCL timeout is 10 minutes).")                                \
  X(profiler_proxy, Enum, "suspect", "off|suspect|always",                                         \
    "Proxy detail of the profiler plugin (NCCL's ProxyOp/ProxyStep events: where each network "    \
    "transfer stands, per channel and peer): always, only while the watchdog suspects a hang "     \
    "(operations issued from then on), or off. The default events (API, Coll, P2p, KernelCh) "     \
    "are always asked for.")                                                                       \
  X(on_hang, Enum, "report", "report|abort",                                                       \
    "On a confirmed hang: report (verdict.json, stderr), or also ncclCommAbort this rank's "       \
    "communicators the verdict names and those the stalled rank has work in flight on, so the "    \
    "job fails fast and its launcher can restart it. Suspects are only reported.")                 \
  X(accel, Bool, "0", "",                                                                          \
    "Send eligible ncclAllReduce and ncclAlltoAll calls and the sends and receives of each group " \
    "(one node, sizes of the tuning table; docs/collectives.md) to ncclscope's own kernels; the "  \
    "rest reach NCCL unchanged. Must be the same on every rank of a job.")                         \
  X(accel_buffer, Size, "16m", "65536..1073741824",                                                \
    "Bytes of each communicator's staging and scratch buffers for ncclscope's kernels (device "    \
    "memory, allocated at its set-up: its creation, or else its first eligible call); larger "     \
    "calls go to NCCL, and so do a group's sends and receives when it holds less than 512 KiB "    \
    "per rank of the communicator (two 256 KiB chunk slots per destination).")                     \
  X(accel_timeout_ms, Int, "600000", "100..3600000",                                               \
    "A wait of ncclscope's kernels for another rank that lasts this long ends the kernel, which "  \
    "writes down which rank it waited for where (never a silent hang); that call's result is "     \
    "undefined, so it must outlast every healthy pause (checkpoints, slow ranks): the default "    \
    "is PyTorch's NCCL timeout. Milliseconds.")                                                    \
  X(numerics, Enum, "off", "off|nan|checksum|all",                                                 \
    "Numerics passes on sampled collectives (docs/collectives.md, Numerics in a job): nan scans "  \
    "the input for NaN/Inf before NCCL runs, checksum hashes the output of AllReduce, AllGather, " \
    "Broadcast and ReduceScatter after it, all does both. A sampled call costs a kernel launch "   \
    "and one read of the buffer per pass; off loads nothing.")                                     \
  X(numerics_every, Int, "10", "1..1000000000",                                                    \
    "Sample one collective in this many per communicator (counting only the operations of "        \
    "NCCLSCOPE_NUMERICS_OPS); every rank samples the same ones. 1 checks every call.")             \
  X(numerics_ops, String, "", "",                                                                  \
    "Comma-separated collectives to sample (allreduce, allgather, reducescatter, broadcast, "      \
    "reduce, alltoall, gather, scatter). Empty: all of them.")                                     \
  X(numerics_comms, String, "", "",                                                                \
    "Comma-separated communicators to sample, by name or by id as ncclscope prints it. Empty: "    \
    "all of them. Must be the same on every rank of a job.")                                       \
  X(exporter, String, "", "",                                                                      \
    "Read by `ncclscope run`, not by the library: PORT or ADDR:PORT of the node's metrics "        \
    "exporter it starts with the job (as run --exporter=...; PORT alone listens on 0.0.0.0). "     \
    "Empty: none.")

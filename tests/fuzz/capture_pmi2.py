#!/usr/bin/env python3
"""Records a process manager's PMI-2 replies as it frames them.

Run as every rank of a 2-rank job under the process manager:
    mpiexec.hydra -n 2 python3 capture_pmi2.py OUTDIR
    srun --mpi=pmi2 -n 2 python3 capture_pmi2.py OUTDIR
Each rank speaks the session of LCI's pmi2 backend (src/bootstrap/pmi2.cpp:
init in the PMI-1 format, fullinit, kvs-put, kvs-fence, kvs-get of a key
another rank put and of one nobody put, info-getjobattr, finalize) over PMI_FD
and writes every byte the server sent back, unchanged, to
OUTDIR/pmi2-<rank>.bin. make_corpus.py turns rank 0's file into a seed of
the pmi corpus (tests/fuzz/corpus/pmi). Requests are framed as MPICH's
client does (length right-aligned in 6 characters).
"""
import os
import socket
import sys


def main():
    out = sys.argv[1]
    fd = int(os.environ["PMI_FD"])
    rank = int(os.environ.get("PMI_RANK", "0"))
    jobid = os.environ.get("PMI_JOBID", "")
    s = socket.socket(fileno=fd)
    got = bytearray()

    def recv_line():
        while b"\n" not in got[start[0]:]:
            chunk = s.recv(4096)
            if not chunk:
                raise EOFError("the server closed the connection")
            got.extend(chunk)
        end = got.index(b"\n", start[0]) + 1
        start[0] = end

    def recv_v2():
        while len(got) < start[0] + 6:
            got.extend(s.recv(4096))
        n = int(bytes(got[start[0]:start[0] + 6]).strip())
        while len(got) < start[0] + 6 + n:
            got.extend(s.recv(4096))
        body = bytes(got[start[0] + 6:start[0] + 6 + n])
        start[0] += 6 + n
        return body

    def call(body):
        s.sendall(b"%6d" % len(body) + body)
        return recv_v2()

    start = [0]
    s.sendall(b"cmd=init pmi_version=2 pmi_subversion=0\n")
    recv_line()
    call(b"cmd=fullinit;pmijobid=%s;pmirank=%d;threaded=FALSE;"
         % (jobid.encode(), rank))
    call(b"cmd=kvs-put;key=capture-%d;value=value-of-%d;" % (rank, rank))
    call(b"cmd=kvs-fence;")
    # after the fence every rank's put is there (hydra may hold the get
    # until every rank has fenced)
    call(b"cmd=kvs-get;jobid=%s;srcid=-1;key=capture-%d;"
         % (jobid.encode(), 1 - rank))
    call(b"cmd=kvs-get;jobid=%s;srcid=-1;key=nobody-put-this;"
         % jobid.encode())
    call(b"cmd=info-getjobattr;key=PMI_process_mapping;")
    call(b"cmd=finalize;")
    with open(os.path.join(out, "pmi2-%d.bin" % rank), "wb") as f:
        f.write(bytes(got))


if __name__ == "__main__":
    main()

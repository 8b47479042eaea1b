#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/...).

Run from anywhere: python3 tests/fuzz/make_corpus.py. The files are
committed; rerun after changing the seeds. packet/: one message each, as the
network delivers it (src/core/protocol.hpp: 16-byte header, then payload).
pmi/: a mode byte (bit 0: the client reads PMI-2, bit 1: the server's
connection is bound to rank 0), then the bytes of the stream.

The lf-* files next to the seeds are inputs libFuzzer found (a minimized
merge, -merge=1, of the runs in docs/RELIABILITY.md, "Fuzzing"); this
script leaves them alone.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SEND, AM, RTS_SEND, RTS_AM, RTR, FIN, SIGNAL, PUT, PUT_ACK = range(1, 10)
RANK_TAG = 3


def header(tag, rank, type_, aux, policy=RANK_TAG):
    return struct.pack("<QiI", tag, rank, type_ | (policy << 4) | (aux << 8))


def rts(ctx, size, frag, proto, rbase=0, rkey=0, rdisp=0):
    return struct.pack("<QQQIIQQQ", ctx, size, frag, proto, 0, rbase, rdisp, rkey)


PACKETS = {
    "send_engine0": header(5, 0, SEND, 0) + b"hello, world",
    "send_empty": header(6, 0, SEND, 0),
    "send_engine2_tag_only": header(7, 0, SEND, 2, policy=2) + b"x" * 100,
    "send_early_engine9": header(8, 0, SEND, 9) + b"early",
    "send_coll_engine": header(8, 0, SEND, 1) + b"coll",
    "am_counter": header(9, 0, AM, 0) + b"to the counter",
    "am_unregistered": header(9, 0, AM, 7) + b"nobody",
    "rts_send_writeimm": header(10, 0, RTS_SEND, 0) + rts(1, 100000, 65536, 2),
    "rts_send_get": header(11, 0, RTS_SEND, 0)
    + rts(2, 5000, 4096, 3, 0x1000, 42),
    "rts_am_unregistered": header(12, 0, RTS_AM, 3) + rts(3, 9000, 9000, 1),
    "rtr_unknown_ctx": header(13, 0, RTR, 0)
    + struct.pack("<QIIQQQ", 77, 5, 0, 0x2000, 0, 1),
    "fin_unknown_ctx": header(14, 0, FIN, 0) + struct.pack("<QQ", 0x1000001, 0),
    "fin_rejected": header(14, 0, FIN, 0) + struct.pack("<QQ", 1, 2**64 - 1),
    "signal_counter": header(15, 0, SIGNAL, 0) + struct.pack("<QQQ", 1, 0, 8),
    "signal_unregistered": header(15, 0, SIGNAL, 5)
    + struct.pack("<QQQ", 1, 0, 8),
    # a small put with signal: signal (rkey, disp, size), operation id, data
    "put_counter": header(16, 0, PUT, 0) + struct.pack("<QQQQ", 1, 0, 4, 3)
    + b"data",
    "put_bad_size": header(16, 0, PUT, 0) + struct.pack("<QQQQ", 1, 0, 9, 3)
    + b"data",
    "put_ack_unknown": header(17, 0, PUT_ACK, 0) + struct.pack("<QQ", 5, 0),
    "put_ack_refused": header(17, 0, PUT_ACK, 0) + struct.pack("<QQ", 1, 1),
    "short": b"\x01\x02\x03",
    "bad_type": header(1, 0, 12, 0) + b"?",
    "bad_rank": header(1, 5, SEND, 0) + b"?",
    "bad_policy": header(1, 0, SEND, 0, policy=9) + b"?",
}

def slurm_v2(body):
    """A PMI-2 message as Slurm frames it: the length left-aligned."""
    return b"%-6d" % len(body) + body


SLURM_FULLINIT = (b"cmd=fullinit-response;rc=%s;pmi-version=2;pmi-subversion=0;"
                  b"rank=0;size=2;appnum=-1;debugged=FALSE;pmiverbose=FALSE;")

# Replies captured from the real servers by capture_pmi2.py (2 ranks, rank
# 0's stream, unchanged): the PMI-1 reply to init, then each PMI-2 reply as
# the server framed it (hydra: length right-aligned; Slurm: left-aligned).
# MPICH 4.0.2's mpiexec.hydra:
HYDRA_CAPTURED = [
    b'cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n',
    b'   113cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=0;size=2;appnum=0;debugged=FALSE;pmiverbose=FALSE;rc=0;',
    b'    26cmd=kvs-put-response;rc=0;',
    b'    28cmd=kvs-fence-response;rc=0;',
    b'    54cmd=kvs-get-response;found=TRUE;value=value-of-1;rc=0;',
    b'    38cmd=kvs-get-response;found=FALSE;rc=0;',
    b'    68cmd=info-getjobattr-response;found=TRUE;value=(vector,(0,1,1));rc=0;',
    b'    27cmd=finalize-response;rc=0;',
]
# Slurm 22.05's pmi2 plugin (srun --mpi=pmi2):
SLURM_CAPTURED = [
    b'cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n',
    b'114   cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=2;appnum=-1;debugged=FALSE;pmiverbose=FALSE;',
    b'26    cmd=kvs-put-response;rc=0;',
    b'28    cmd=kvs-fence-response;rc=0;',
    b'54    cmd=kvs-get-response;rc=0;found=TRUE;value=value-of-1;',
    b'38    cmd=kvs-get-response;rc=0;found=FALSE;',
    b'68    cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,1,2));',
    b'27    cmd=finalize-response;rc=0;',
]


PMI = {
    "v1_init": (0, b"cmd=init pmi_version=1 pmi_subversion=1\n"
                b"cmd=get_maxes\ncmd=get_my_kvsname\n"),
    "v1_session": (2, b"cmd=init pmi_version=1 pmi_subversion=1\n"
                   b"cmd=put kvsname=kvs_fuzz key=a value=b c\n"
                   b"cmd=get kvsname=kvs_fuzz key=a\n"
                   b"cmd=get kvsname=kvs_fuzz key=PMI_process_mapping\n"
                   b"cmd=barrier_in\ncmd=finalize\n"),
    "v1_port_mode": (0, b"cmd=get_universe_size\ncmd=initack pmiid=1\n"
                     b"cmd=initack pmiid=1\ncmd=get_appnum\n"),
    "v1_spawn": (2, b"mcmd=spawn\nnprocs=2\nendcmd\ncmd=abort "
                 b"exitcode=99999999999 message=bye bye\n"),
    "v1_replies": (2, b"cmd=response_to_init pmi_version=1 rc=0\n"
                   b"cmd=get_result rc=0 msg=success value=v\n"
                   b"cmd=barrier_out rc=0\n\r\n"
                   b"cmd=get_result rc=-1 msg=nope\n"),
    "v2_replies": (1, b"    48cmd=fullinit-response;rc=0;rank=0;size=1;"
                   b"    45cmd=kvs-get-response;rc=0;found=TRUE;value=x;"
                   b"    32cmd=kvs-get-response;found=;"),
    "v2_bad_length": (1, b"  1x2cmd=fullinit-response;"),
    # Slurm 22.05's pmi2 plugin (srun --mpi=pmi2), lengths left-aligned: a
    # session, a fullinit it refuses (rc=3, no errmsg), a kvs-fence it fails
    "v2_slurm_replies": (1, b"".join(map(slurm_v2, [
        SLURM_FULLINIT % b"0", b"cmd=kvs-put-response;rc=0;",
        b"cmd=kvs-fence-response;rc=0;",
        b"cmd=kvs-get-response;rc=0;found=TRUE;value=0a1b;",
        b"cmd=kvs-get-response;rc=0;found=FALSE;",
        b"cmd=finalize-response;rc=0;"]))),
    "v2_slurm_refused": (1, slurm_v2(SLURM_FULLINIT % b"3")),
    "v2_slurm_fence_error": (1, slurm_v2(
        b"cmd=kvs-fence-response;rc=14;"
        b"errmsg=mpi/pmi2: failed to send temp kvs;")),
    # the captured sessions: the PMI-2 replies alone, as the client reads
    # them after init, and the whole stream read as PMI-1 lines
    "v2_hydra_captured": (1, b"".join(HYDRA_CAPTURED[1:])),
    "v2_slurm_captured": (1, b"".join(SLURM_CAPTURED[1:])),
    "v1_hydra_captured": (0, b"".join(HYDRA_CAPTURED)),
    "v1_slurm_captured": (0, b"".join(SLURM_CAPTURED)),
    # cut inside a frame (the stream ends in the middle of a reply)
    "v2_hydra_cut": (1, b"".join(HYDRA_CAPTURED[1:3])[:-9]),
    "v2_slurm_cut": (1, b"".join(SLURM_CAPTURED[1:3])[:-9]),
}


def main():
    for sub, seeds in (("packet", PACKETS), ("pmi", PMI)):
        d = os.path.join(HERE, "corpus", sub)
        os.makedirs(d, exist_ok=True)
        for name, value in seeds.items():
            data = bytes([value[0]]) + value[1] if sub == "pmi" else value
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Serial k-mer count with a plain dict: the test oracle of apps/kmer.

Written apart from the C++ code on purpose (strings, not 2-bit packing; a
dict, not a Bloom filter and a sharded table), so that a mistake shared by
the two would have to be made twice.

  serial_count.py -k 31 --histo ref.histo reads.fq.gz [more files]
  serial_count.py -k 31 --check-output kmers.txt --min-count 2 reads.fq.gz

Input: FASTQ (4 lines a record) or FASTA (several sequence lines a record),
gzip or plain; every character other than ACGT (either case) breaks
k-mers. It does not validate the input: the tests give it good files.
"""
import argparse
import gzip
import re
import sys

COMPLEMENT = str.maketrans("ACGT", "TGCA")
BREAK = re.compile("[^ACGT]+")


def open_text(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt")
    return open(path)


def sequences(path):
    with open_text(path) as f:
        lines = [line.rstrip("\r\n") for line in f]
    first = next((line for line in lines if line.strip()), "")
    if first.startswith("@"):
        i = 0
        while i < len(lines):
            if not lines[i].strip():
                i += 1
                continue
            yield lines[i + 1]
            i += 4
    else:
        seq = None
        for line in lines:
            if line.startswith(">"):
                if seq is not None:
                    yield "".join(seq)
                seq = []
            elif line.strip() and not line.startswith(";"):
                seq.append(line)
        if seq is not None:
            yield "".join(seq)


def count(paths, k):
    counts = {}
    for path in paths:
        for seq in sequences(path):
            for run in BREAK.split(seq.upper()):
                for i in range(len(run) - k + 1):
                    fwd = run[i:i + k]
                    rev = fwd.translate(COMPLEMENT)[::-1]
                    key = fwd if fwd < rev else rev
                    counts[key] = counts.get(key, 0) + 1
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", type=int, required=True)
    ap.add_argument("--histo", help="write the histogram (every count)")
    ap.add_argument("--max-count", type=int, default=10000)
    ap.add_argument("--check-output",
                    help="compare a `kmer --output` file with the counts")
    ap.add_argument("--min-count", type=int, default=2,
                    help="lowest count the checked output holds")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    counts = count(args.files, args.k)
    if args.histo:
        hist = {}
        for c in counts.values():
            c = min(c, args.max_count)
            hist[c] = hist.get(c, 0) + 1
        with open(args.histo, "w") as f:
            for c in sorted(hist):
                f.write(f"{c} {hist[c]}\n")
    if args.check_output:
        want = {km: c for km, c in counts.items() if c >= args.min_count}
        got = {}
        with open(args.check_output) as f:
            for n, line in enumerate(f, 1):
                km, c = line.split()
                if km in got:
                    sys.exit(f"{args.check_output}:{n}: {km} twice")
                got[km] = int(c)
        if got != want:
            missing = [km for km in want if km not in got]
            extra = [km for km in got if km not in want]
            wrong = [km for km in got if km in want and got[km] != want[km]]
            sys.exit(f"{args.check_output}: {len(missing)} k-mers missing, "
                     f"{len(extra)} extra, {len(wrong)} with a wrong count "
                     f"(of {len(want)}); e.g. "
                     f"{(missing + extra + wrong)[:3]}")
        print(f"{args.check_output}: {len(got)} k-mers, all counts right")


if __name__ == "__main__":
    main()

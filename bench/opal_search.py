"""Opal (pyopal), the inter-sequence Smith-Waterman peer of warpt's sw_align.

    python opal_search.py ALPHABET QUERIES.fa TARGETS.fa THREADS REPEATS OUT.csv

Aligns every query against every target of the two FASTA files, scores
only (mode "score"), local (algorithm "sw"), gap open 10 and extend 1 (a
gap of length L costs 10 + (L - 1), parasail's and warpt's convention),
BLOSUM62 for protein and NUC.4.4 (EMBOSS's dnafull) for DNA, on THREADS
threads. The targets are encoded into Opal's database once, untimed (warpt
parses its targets before its timed passes too); each pass aligns every
query and is timed whole. Prints `seconds=` (the median pass) and `passes=`,
and writes `query,target,score` (0-based indices, a header first) to OUT.
"""
import statistics
import sys
import time
from multiprocessing.pool import ThreadPool

import pyopal
from scoring_matrices import ScoringMatrix


def read_fasta(path):
    seqs, cur = [], None
    for line in open(path):
        line = line.strip()
        if line.startswith(">"):
            if cur is not None:
                seqs.append("".join(cur))
            cur = []
        elif line:
            cur.append(line)
    if cur is not None:
        seqs.append("".join(cur))
    return seqs


def main():
    alphabet, qpath, tpath, threads, repeats, out = sys.argv[1:7]
    matrix = ScoringMatrix.from_name("BLOSUM62" if alphabet == "protein" else "NUC.4.4")
    queries, targets = read_fasta(qpath), read_fasta(tpath)
    db = pyopal.Database(targets, alphabet=pyopal.Alphabet(matrix.alphabet))
    scores = {}
    times = []
    with ThreadPool(int(threads)) as pool:
        for _ in range(int(repeats)):
            start = time.perf_counter()
            for qi, q in enumerate(queries):
                for r in pyopal.align(q, db, matrix, gap_open=10, gap_extend=1, mode="score",
                                      algorithm="sw", pool=pool):
                    scores[(qi, r.target_index)] = r.score
            times.append(time.perf_counter() - start)
    with open(out, "w") as f:
        f.write("query,target,score\n")
        for (qi, ti), s in sorted(scores.items()):
            f.write(f"{qi},{ti},{s}\n")
    print(f"seconds={statistics.median(times)} passes={len(times)}")


if __name__ == "__main__":
    main()

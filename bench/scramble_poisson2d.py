#!/usr/bin/env python3
"""bench/scramble_poisson2d.py N OUT [SEED] -- write the 5-point Laplacian of an N x N grid (the
matrix of `poisson2d:N`: 4 on the diagonal, -1 to each grid neighbour) as a Matrix Market file
with its unknowns numbered in a seeded random order: a mesh numbered badly, the input that
`solve --reorder rcm` is for (docs/solvers.md, "Reordering"). Plain Python, no NumPy."""
import random
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    n1, out = int(sys.argv[1]), sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) == 4 else 1
    n = n1 * n1
    rng = random.Random(seed)
    new = list(range(n))          # new[i]: the scrambled index of grid node i
    rng.shuffle(new)
    ent = []
    for i in range(n):
        x, y = i % n1, i // n1
        ent.append((new[i], new[i], 4.0))
        for a, b in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
            if 0 <= a < n1 and 0 <= b < n1:
                ent.append((new[i], new[b * n1 + a], -1.0))
    with open(out, "w") as f:
        f.write("%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (n, n, len(ent)))
        f.writelines("%d %d %g\n" % (i + 1, j + 1, v) for i, j, v in ent)


if __name__ == "__main__":
    main()

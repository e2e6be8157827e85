#!/usr/bin/env python3
# trace2.patch events (consumer, per tile): 0 ready (after the order wait), 6 before the first full-barrier wait,
# 7 after it, 4 after the first k-block's wgmmas were issued (before commit), 1 after that commit, 2 last k-block
# issued, 3 wgmmas done. Quartiles over every hand-off of every CTA.
import struct, sys, statistics as st
data = open(sys.argv[1], 'rb').read()
grid, cs, bm, bn = struct.unpack('4i', data[:16]); v = struct.unpack('%dQ' % ((len(data) - 16) // 8), data[16:])
ev = lambda c, w, j: v[((c * 3 + w) * 64 + j) * 8:((c * 3 + w) * 64 + j) * 8 + 8]
rows = {k: [] for k in ['arrive->ready', 'ready->full wait', 'full wait', 'first k-block issue', 'commit',
                        'prev done - first issue start', 'prev done - first issue end', 'last issue->done']}
for c in range(grid):
    tiles = []
    for j in range(64):
        e = ev(c, 1 + j % 2, j)
        if e[0] == 0: break
        tiles.append(e)
    for i in range(1, len(tiles)):
        p, t = tiles[i - 1], tiles[i]
        rows['arrive->ready'].append(t[0] - p[2]); rows['ready->full wait'].append(t[6] - t[0])
        rows['full wait'].append(t[7] - t[6]); rows['first k-block issue'].append(t[4] - t[7])
        rows['commit'].append(t[1] - t[4]); rows['prev done - first issue start'].append(p[3] - t[7])
        rows['prev done - first issue end'].append(p[3] - t[4]); rows['last issue->done'].append(p[3] - p[2])
print(f"grid {grid} tile {bm}x{bn}")
for k, x in rows.items(): print(f"  {k:32s} {[int(y) for y in st.quantiles(x, n=4)]}")

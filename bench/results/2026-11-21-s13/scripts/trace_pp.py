#!/usr/bin/env python3
# Reads a ping-pong kernel's clock64 trace (experiment build, scripts/trace.patch) and prints, per CTA and summed:
# where the consumer warpgroups' time goes around the tensor pipe. Events per tile (consumer): 0 ready (after the
# order wait), 1 first k-block issued, 2 last issued, 3 wgmmas done, 4 epilogue issued, 5 full-barrier wait cycles.
import struct, sys, statistics as st
data = open(sys.argv[1], 'rb').read()
grid, cs, bm, bn = struct.unpack('4i', data[:16])
v = struct.unpack('%dQ' % ((len(data) - 16) // 8), data[16:])
def ev(cta, wg, j): o = ((cta * 3 + wg) * 64 + j) * 8; return v[o:o + 8]
tot = dict(span=0, gaps=0, gap_n=0, ml=0, epi=0, fullw=0, tiles=0, first=0, tail=0, prodw=0)
per_tile_gap = []
for cta in range(grid):
    tiles = []
    for j in range(64):
        wg = 1 + j % 2
        e = ev(cta, wg, j)
        if e[0] == 0: break
        tiles.append(e)
    if not tiles: continue
    p0 = ev(cta, 0, 0)[0]
    start = p0 if p0 else tiles[0][0]
    end = max(t[4] for t in tiles)
    tot['span'] += end - start
    tot['first'] += tiles[0][1] - start           # kernel start (first load) -> first k-block issued
    tot['tail'] += end - tiles[-1][3]              # last wgmmas done -> last epilogue issued
    for i, t in enumerate(tiles):
        tot['ml'] += t[3] - t[0]
        tot['epi'] += t[4] - t[3]
        tot['fullw'] += t[5]
        tot['tiles'] += 1
        if i > 0:
            prev = tiles[i - 1]
            g = t[1] - prev[3]                      # first k-block issued after the previous tile's wgmmas were done
            per_tile_gap.append(g)
            if g > 0: tot['gaps'] += g; tot['gap_n'] += 1
    for j in range(64):
        e = ev(cta, 0, j)
        if e[0] == 0: break
        tot['prodw'] += e[5]
n = tot['tiles']; c = sum(1 for cta in range(grid) if ev(cta, 1, 0)[0])
print(f"grid {grid} cluster {cs} tile {bm}x{bn}: {n} tiles on {c} CTAs")
print(f"per CTA: span {tot['span']/c:.0f} clk, first k-block issued {tot['first']/c:.0f} after the first load, "
      f"tail (last wgmma done -> last epilogue issued) {tot['tail']/c:.0f}")
print(f"per tile: mainloop (ready -> wgmmas done) {tot['ml']/n:.0f}, epilogue {tot['epi']/n:.0f}, "
      f"full-barrier waits {tot['fullw']/n:.0f}, producer empty waits {tot['prodw']/n:.0f}")
print(f"hand-offs with the pipe drained (next first issue after previous done): {tot['gap_n']} of {len(per_tile_gap)}, "
      f"{tot['gaps']/max(1,len(per_tile_gap)):.0f} clk per hand-off on average; gap quantiles "
      f"{[int(x) for x in st.quantiles(per_tile_gap, n=10)] if len(per_tile_gap) > 10 else per_tile_gap}")

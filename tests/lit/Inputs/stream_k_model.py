#!/usr/bin/env python3
"""The stream-K decomposition of backend/lib/Transforms/StreamK.cpp, modelled on the host.

It mirrors the kernel's formulas (planStreamK, streamKUnit, streamKAddPartials and the roles
in LowerToNVVM.cpp's consumer), so a change there must be made here too. For many (tiles T,
k-iterations I, CTAs P) it simulates every CTA's units and checks the rules of StreamK.cpp:

  coverage   every k-iteration of every tile is computed by exactly one unit;
  ring       each CTA's units use ring positions 0, 1, 2, ... in processing order;
  S3         a CTA has at most one contributor part (so one slot and one flag);
             each contributor's flag is consumed by exactly one finisher;
  S4         a finisher waits only on lower CTAs, whose contributor part comes before
             their own finisher part (no cycle);
  S5         CTAs start their whole tiles and their last tile at k = 0 (the k offsets of
             co-resident CTAs stay few);
  epilogue   every tile gets exactly one epilogue (a finisher or a whole tile);
  run        executed step by step (producer ring, releases one k-step late, pingpong's turns,
             flags), every CTA of cooperative and pingpong finishes (run_grid).

Prints one line per case and "MISMATCH" on any violation; "--rule" prints S per case too.
"""
import itertools
import sys


def ceil_div(x, d):
    return (x + d - 1) // d


def plan_tiles(T, I, P):
    """S: tiles of the stream-K phase (planStreamK)."""
    rem = T % P
    s1 = T if T < P else (0 if rem == 0 else rem + P)
    dp = ceil_div(T, P) * I
    hybrid = (T - s1) // P * I + ceil_div(s1 * I, P)
    splits = ceil_div(P, max(s1, 1))
    cost = 8 + 2 * splits
    use = s1 > 0 and I >= 2 and dp - hybrid >= cost and dp - hybrid >= dp // 50
    return s1 if use else 0


def launched_ctas(T, sms):
    """The runtime's persistent grid for a stream-K kernel (Kernel.cpp)."""
    return max(1, min(sms, T * 4, 1024))


def start(c, S, I, P):
    return c * S * I // P


def units_of(cta, T, I, P, S):
    """streamKUnit for w in [0, count): (tile, kBegin, kEnd, base) in processing order."""
    begin, end = start(cta, S, I, P), start(cta + 1, S, I, P)
    safe_i = max(I, 1)
    first_tile = begin // safe_i
    units = (end - 1) // safe_i - first_tile + 1 if end > begin else 0
    first_dp = S + cta
    dp_tiles = ceil_div(T - first_dp, P) if T > first_dp else 0
    out = []
    for w in range(units + dp_tiles):
        if w < units:
            rot = w + 1
            if rot == units:
                rot = 0
            t = first_tile + rot
            tile_start = t * I
            frm, to = max(begin, tile_start), min(end, tile_start + I)
            first_len = min(end, (first_tile + 1) * I) - begin
            base = ((end - begin) if rot == 0 else (frm - begin)) - first_len
            out.append((t, frm - tile_start, to - tile_start, base))
        else:
            j = w - units
            out.append((S + cta + j * P, 0, I, (end - begin) + j * I))
    return out


def owner(g, S, I, P):
    return ((g + 1) * P - 1) // (S * I)


def check(T, I, P, S=None):
    if S is None:
        S = plan_tiles(T, I, P)
    errors = []
    covered = {}
    epilogues = [0] * T
    contributors = {}   # cta -> tile
    consumed = {}       # cta whose flag -> finisher cta
    order = {}          # cta -> list of roles in processing order
    for cta in range(P):
        pos = 0
        roles = []
        for (t, kb, ke, base) in units_of(cta, T, I, P, S):
            if not (0 <= t < T):
                errors.append(f"cta {cta}: tile {t} outside [0, {T})")
                continue
            if base != pos:
                errors.append(f"cta {cta}: unit of tile {t} at ring position {base}, expected {pos}")
            pos += ke - kb
            for k in range(kb, ke):
                if (t, k) in covered:
                    errors.append(f"tile {t} k {k}: computed by cta {covered[(t, k)]} and cta {cta}")
                covered[(t, k)] = cta
            if ke != I:
                roles.append("contributor")
                if cta in contributors:
                    errors.append(f"cta {cta}: two contributor parts")
                contributors[cta] = t
            elif kb != 0:
                roles.append("finisher")
                epilogues[t] += 1
                for c in range(owner(t * I, S, I, P), cta):
                    if start(c, S, I, P) < start(c + 1, S, I, P):
                        if c >= cta:
                            errors.append(f"cta {cta} waits on cta {c}")
                        if c in consumed:
                            errors.append(f"flag of cta {c} consumed by {consumed[c]} and {cta}")
                        consumed[c] = cta
            else:
                roles.append("whole")
                epilogues[t] += 1
        order[cta] = roles
    for t in range(T):
        for k in range(I):
            if (t, k) not in covered:
                errors.append(f"tile {t} k {k}: never computed")
        if epilogues[t] != 1:
            errors.append(f"tile {t}: {epilogues[t]} epilogues")
    for c, t in contributors.items():
        if consumed.get(c) is None:
            errors.append(f"cta {c}: contributor part of tile {t} never consumed")
        elif contributors[c] != t:
            errors.append(f"cta {c}: flag for tile {t}")
    for c in consumed:
        if c not in contributors:
            errors.append(f"cta {consumed[c]} waits on cta {c}, which has no contributor part")
    for c, roles in order.items():
        if "finisher" in roles and "contributor" in roles and roles.index("contributor") > roles.index("finisher"):
            errors.append(f"cta {c}: finisher part before its contributor part (rule S4)")
        # S5: the stream-K units other than the last start at k = 0.
    for cta in range(P):
        us = units_of(cta, T, I, P, S)
        sk = [u for u in us if (u[0] < S)]
        for (t, kb, ke, base) in sk[:-1]:
            if kb != 0:
                errors.append(f"cta {cta}: unit of tile {t} starts at k {kb} before its last stream-K unit")
    return S, errors


def run_grid(T, I, P, S, pingpong, stages):
    """Executes every CTA's units step by step and returns the CTAs that never finish (a deadlock).

    Per CTA: the producer issues ring positions in unit order, position p only after the consumers
    released p - stages; a consumer releases position p once it issued p + 1 of the same unit
    (wait_group 1), the unit's last position after wait_group 0. Cooperative: one consumer takes
    every unit. Pingpong: consumer w % 2 takes unit w, mainloops in turn (rule W2: consumer 1
    gives the first turn, each consumer hands the turn over after its mainloop if a unit follows).
    A contributor publishes its flag after its mainloop; a finisher, after its mainloop and the
    hand-over, waits for the flags of the tile's earlier CTAs.
    """
    consumers = 2 if pingpong else 1
    ctas = []
    for c in range(P):
        us = units_of(c, T, I, P, S)
        ctas.append({"units": us, "issued": 0, "released": set(), "next": list(range(consumers)),
                     "state": ["turn"] * consumers, "k": [0] * consumers, "waits": [[]] * consumers,
                     "turns": [1 if us else 0, 0] if pingpong else [1 << 30]})
    flags = set()
    moved = True
    while moved:
        moved = False
        for c, st in enumerate(ctas):
            us = st["units"]
            total = sum(ke - kb for (_, kb, ke, _) in us)
            while st["issued"] < total and (st["issued"] < stages or st["issued"] - stages in st["released"]):
                st["issued"] += 1
                moved = True
            for q in range(consumers):
                w = st["next"][q]
                if w >= len(us):
                    continue
                t, kb, ke, base = us[w]
                if st["state"][q] == "turn" and st["turns"][q] > 0:
                    st["turns"][q] -= 1
                    st["state"][q], st["k"][q] = "main", 0
                    moved = True
                if st["state"][q] == "main":
                    while st["k"][q] < ke - kb and base + st["k"][q] < st["issued"]:
                        if st["k"][q] > 0:
                            st["released"].add(base + st["k"][q] - 1)
                        st["k"][q] += 1
                        moved = True
                    if st["k"][q] == ke - kb:
                        if ke > kb:
                            st["released"].add(base + ke - kb - 1)
                        if pingpong and w + 1 < len(us):
                            st["turns"][1 - q] += 1
                        if ke != I:
                            flags.add(c)
                        st["waits"][q] = [x for x in range(owner(t * I, S, I, P), c)
                                          if start(x, S, I, P) < start(x + 1, S, I, P)] if ke == I and kb else []
                        st["state"][q] = "epilogue"
                        moved = True
                if st["state"][q] == "epilogue" and all(x in flags for x in st["waits"][q]):
                    st["next"][q] += consumers
                    st["state"][q] = "turn"
                    moved = True
    return [c for c, st in enumerate(ctas)
            if any(w < len(st["units"]) for w in st["next"]) or (pingpong and any(st["turns"]))]


def main():
    cases = [
        # (T, I, sms) as the runtime would launch them; the shapes first.
        (2048, 128, 132),   # 8192^3, 128x256
        (4096, 128, 132),   # 8192^3, 128x128
        (512, 64, 132),     # 4096^3, 128x256: whole tiles (gain 7)
        (1024, 64, 132),    # 4096^3, 128x128
        (1792, 64, 132),    # 4096x14336x4096, 128x256
        (512, 224, 132),    # 4096x4096x14336, 128x256
        (7168, 128, 132),   # 8192x28672x8192, 128x256: whole tiles (gain 89 of 7040, < 2%)
        (4096, 16, 132),    # 16384x8192x1024, 128x256
        (8192, 16, 132),    # 16384x8192x1024, 128x128: whole tiles (gain 15 of 1008, < 2%)
        (14336, 128, 132),  # 8192x28672x8192, 128x128: whole tiles (gain 50 of 13952)
        (32, 128, 132),     # 128x8192x8192, 128x256: 4 parts per tile
        (2, 128, 132),      # 256x256x8192, 128x256
        (15, 32, 132),      # 300x520x2048, 128x128 (the sanitizer case)
        (1, 1, 132), (1, 7, 132), (3, 2, 132), (200, 3, 132),
    ]
    # And a sweep of small cases, every CTA count.
    for T, I in itertools.product([1, 2, 3, 5, 8, 13, 40, 133, 270], [1, 2, 3, 4, 9, 16, 33]):
        cases.append((T, I, 132))
    for T, I, sms in [(50, 20, 7), (9, 40, 16), (100, 100, 64)]:
        cases.append((T, I, sms))
    bad = 0
    for T, I, sms in cases:
        P = launched_ctas(T, sms)
        S, errors = check(T, I, P)
        status = "OK" if not errors else "MISMATCH " + "; ".join(errors[:3])
        bad += bool(errors)
        print(f"T={T} I={I} P={P} S={S}: {status}")
    # The units and roles must hold for any S the rule could pick (every tile, or the last
    # wave plus one), including more CTAs than iterations (empty ranges).
    forced = 0
    for T, I, P in itertools.product([1, 2, 3, 7, 20, 131, 133, 300], [1, 2, 3, 5, 16, 64], [1, 4, 7, 60, 132]):
        for S in sorted({T, (T % P + P) if T > P and T % P else T}):
            _, errors = check(T, I, P, S)
            forced += 1
            if errors:
                bad += 1
                print(f"forced T={T} I={I} P={P} S={S}: MISMATCH " + "; ".join(errors[:3]))
    print(f"{len(cases)} cases and {forced} forced splits, {bad} with errors")
    # Whole-grid execution, cooperative and pingpong, rings of 2 and 4 stages: every CTA finishes
    # and pingpong leaves no turn half-given (rules W1, W2, S4).
    runs = stuck = 0
    for T, I, P in itertools.product([1, 2, 3, 7, 15, 20, 131, 133, 300], [1, 2, 3, 5, 16], [1, 4, 7, 60, 132]):
        for S in sorted({0, T, (T % P + P) if T > P and T % P else T, plan_tiles(T, I, P)}):
            for pingpong, stages in itertools.product([False, True], [2, 4]):
                runs += 1
                left = run_grid(T, I, P, S, pingpong, stages)
                if left:
                    stuck += 1
                    bad += 1
                    print(f"MISMATCH {'pingpong' if pingpong else 'cooperative'} T={T} I={I} P={P} S={S} "
                          f"stages={stages}: CTAs {left[:5]} never finish")
    print(f"{runs} whole-grid runs, {stuck} deadlocked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""mpi4py's reductions under the preload: comm.allreduce (pickled objects), comm.Allreduce and
comm.Reduce on buffers (numpy float64 and int32 arrays; array.array without numpy), in place
and not; and the gather family: comm.allgather (pickled objects: mpi4py's MPI_Allgather of
the sizes and MPI_Allgatherv of the data), comm.Allgather and comm.Gather on buffers;
comm.Alltoall and comm.Alltoallv on buffers. Checks the values (float64 sums bitwise against the left-to-right fold in rank
order, numacoll's documented order on one node) and that numacoll ran every buffer call
(numacoll_mpi_stats_sized through ctypes). Run with NUMACOLL_MPI_SETUP_AFTER=0 on one node.
Prints "mpi4py reductions: PASS ..." on rank 0; exits 1 on a failure."""
import array
import ctypes
import sys

from mpi4py import MPI

try:
    import numpy as np
except ImportError:
    np = None

FIELDS = ("barrier_calls barrier_numacoll bcast_calls bcast_numacoll bcast_staged fortran_calls "
          "comms_set_up comms_freed teams_created teams_destroyed team_failures progress_calls "
          "teams_reused bcast_states_kept comms_deferred comms_promoted allreduce_calls "
          "allreduce_numacoll reduce_calls reduce_numacoll reduce_scatter_block_calls "
          "reduce_scatter_block_numacoll reduce_scatter_calls reduce_scatter_numacoll scan_calls "
          "scan_numacoll exscan_calls exscan_numacoll allgather_calls allgather_numacoll "
          "allgatherv_calls allgatherv_numacoll gather_calls gather_numacoll gatherv_calls "
          "gatherv_numacoll scatter_calls scatter_numacoll scatterv_calls scatterv_numacoll "
          "move_staged alltoall_calls alltoall_numacoll alltoallv_calls alltoallv_numacoll "
          "alltoall_staged").split()


class Stats(ctypes.Structure):
    """The leading fields of numacoll_mpi_stats_t (src/mpi/numacoll_mpi.h) this test reads"""
    _fields_ = [(name, ctypes.c_uint64) for name in FIELDS]


comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
bad = []


def check(cond, what):
    if not cond:
        bad.append(what)
        print(f"[rank {rank}] CHECK FAILED: {what}", file=sys.stderr, flush=True)


try:
    stats_fn = ctypes.CDLL(None).numacoll_mpi_stats_sized
    stats_fn.restype = ctypes.c_size_t
    stats_fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
except AttributeError:
    stats_fn = None
check(stats_fn is not None, "numacoll_mpi_stats_sized not found: libnumacoll_mpi is not preloaded")


def stats():
    s = Stats()
    if stats_fn:
        stats_fn(ctypes.byref(s), ctypes.sizeof(s))
    return s


def buf(kind, values):
    """a float64 ('d') or int32 ('i') buffer of @p values"""
    if np is not None:
        return np.array(values, dtype="f8" if kind == "d" else "i4")
    return array.array(kind, values)


def value(r, i):
    """rank r's i-th float64 input: rounds differently in another order"""
    return (r + 1) / (3.0 + i % 17) + (i % 5) * 1e-3 * (-1) ** r


def fold(n):
    """the serial left-to-right fold in rank order of every rank's input"""
    out = [value(0, i) for i in range(n)]
    for r in range(1, size):
        out = [a + value(r, i) for i, a in enumerate(out)]
    return out


# pickled objects: mpi4py's own algorithm over point-to-point messages (not MPI_Allreduce)
check(comm.allreduce(rank + 1, op=MPI.SUM) == size * (size + 1) // 2, "allreduce of ints")
check(sorted(comm.allreduce([rank], op=MPI.SUM)) == list(range(size)), "allreduce of lists")
check(comm.allreduce({"r": rank}["r"] * 7 % size, op=MPI.MAX) == max(r * 7 % size
                                                                      for r in range(size)),
      "allreduce MAX of objects")

s0 = stats()
n_all = n_red = 0
root = size - 1
for n in (1, 1001, 100003):  # 100003 doubles: 12 fragments of 64 KiB and a part
    send = buf("d", [value(rank, i) for i in range(n)])
    recv = buf("d", [0.0] * n)
    comm.Allreduce(send, recv, op=MPI.SUM)
    n_all += 1
    want = fold(n)
    check(list(recv) == want, f"Allreduce float64 SUM of {n}: not the rank-order fold")
    # in place
    comm.Allreduce(MPI.IN_PLACE, send, op=MPI.SUM)
    n_all += 1
    check(list(send) == want, f"Allreduce float64 SUM of {n} in place")
ints = buf("i", [rank + 1] * 77)
comm.Allreduce(MPI.IN_PLACE, ints, op=MPI.PROD)
n_all += 1
fact = 1
for r in range(1, size + 1):
    fact *= r
check(list(ints) == [fact] * 77, "Allreduce int32 PROD in place")
ints = buf("i", [(rank * 5 + i) % 11 for i in range(300)])
out = buf("i", [-1] * 300)
comm.Reduce(ints, out if rank == root else None, op=MPI.MAX, root=root)
n_red += 1
if rank == root:
    check(list(out) == [max((r * 5 + i) % 11 for r in range(size)) for i in range(300)],
          "Reduce int32 MAX")
dbl = buf("d", [value(rank, i) for i in range(5000)])
if rank == 0:
    comm.Reduce(MPI.IN_PLACE, dbl, op=MPI.SUM, root=0)
    check(list(dbl) == fold(5000), "Reduce float64 SUM in place at the root")
else:
    comm.Reduce(dbl, None, op=MPI.SUM, root=0)
n_red += 1
s1 = stats()
ran_all = s1.allreduce_numacoll - s0.allreduce_numacoll
ran_red = s1.reduce_numacoll - s0.reduce_numacoll
check(ran_all == n_all and ran_red == n_red,
      f"numacoll ran {ran_all} of {n_all} Allreduce and {ran_red} of {n_red} Reduce calls")

# the gather family: objects (mpi4py allgathers their sizes, then their bytes with
# MPI_Allgatherv), buffers with MPI_Allgather and MPI_Gather
s0 = stats()
check(comm.allgather({"rank": rank, "pad": "x" * rank}) ==
      [{"rank": r, "pad": "x" * r} for r in range(size)], "allgather of objects")
mine = buf("i", [rank * 100 + i for i in range(1000)])
every = buf("i", [-1] * (1000 * size))
comm.Allgather(mine, every)
check(list(every) == [r * 100 + i for r in range(size) for i in range(1000)], "Allgather int32")
every = buf("i", [-1] * (1000 * size))
comm.Gather(mine, every if rank == root else None, root=root)
if rank == root:
    check(list(every) == [r * 100 + i for r in range(size) for i in range(1000)], "Gather int32")
s1 = stats()
ran_ag = s1.allgather_numacoll - s0.allgather_numacoll
ran_agv = s1.allgatherv_numacoll - s0.allgatherv_numacoll
ran_g = s1.gather_numacoll - s0.gather_numacoll
check(ran_ag >= 2 and ran_agv >= 1 and ran_g == 1,
      f"numacoll ran {ran_ag} Allgather, {ran_agv} Allgatherv, {ran_g} Gather calls "
      "(expected at least 2, 1 and 1)")

# MPI_Alltoall and MPI_Alltoallv on buffers (rank r sends rank d r * 1000 + d * 10 + i;
# alltoallv: d + 1 ints to rank d)
s0 = stats()
mine = buf("i", [rank * 1000 + d * 10 + i for d in range(size) for i in range(3)])
got = buf("i", [-1] * (3 * size))
comm.Alltoall(mine, got)
check(list(got) == [r * 1000 + rank * 10 + i for r in range(size) for i in range(3)],
      "Alltoall int32")
sc = [d + 1 for d in range(size)]
sd = [sum(sc[:d]) for d in range(size)]
mine = buf("i", [rank * 1000 + d * 10 + i for d in range(size) for i in range(d + 1)])
got = buf("i", [-1] * ((rank + 1) * size))
comm.Alltoallv([mine, (sc, sd), MPI.INT], [got, ([rank + 1] * size, None), MPI.INT])
check(list(got) == [r * 1000 + rank * 10 + i for r in range(size) for i in range(rank + 1)],
      "Alltoallv int32")
s1 = stats()
ran_a2a = s1.alltoall_numacoll - s0.alltoall_numacoll
ran_a2av = s1.alltoallv_numacoll - s0.alltoallv_numacoll
check(ran_a2a == 1 and ran_a2av == 1,
      f"numacoll ran {ran_a2a} Alltoall and {ran_a2av} Alltoallv calls (expected 1 and 1)")

failed = comm.allreduce(len(bad), op=MPI.SUM)
if rank == 0:
    print(f"mpi4py reductions: {'PASS' if failed == 0 else 'FAIL'} ({size} ranks, "
          f"{'numpy' if np is not None else 'array.array (no numpy)'} buffers, "
          f"{ran_all} Allreduce and {ran_red} Reduce calls numacoll's, {ran_ag} Allgather, "
          f"{ran_agv} Allgatherv and {ran_g} Gather calls numacoll's, {ran_a2a} Alltoall and "
          f"{ran_a2av} Alltoallv calls numacoll's, {failed} failed checks)",
          flush=True)
sys.exit(1 if failed else 0)

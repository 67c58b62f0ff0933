# Python programs with known call chains, for tests/python.sh: one per
# mode (argv[1]), each spending its CPU time in a known leaf.
import sys
import threading
import zlib

SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5


def spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def cpu_loop(fn):
    # Run fn until SECONDS of this thread's CPU time have passed.
    import time
    t0 = time.thread_time()
    r = 0
    while time.thread_time() - t0 < SECONDS:
        r += fn()
    return r


# main: <module> -> main_driver -> main_mid -> main_leaf
def main_leaf():
    return spin(20000)


def main_mid():
    return main_leaf()


def main_driver():
    return cpu_loop(main_mid)


# thread: Thread.run -> thread_work -> thread_leaf
def thread_leaf():
    return spin(20000)


def thread_work():
    cpu_loop(thread_leaf)


# sort: sort_driver -> sorted (C) -> <lambda> -> sort_key
def sort_key(x):
    return spin(300) + x


def sort_driver():
    data = list(range(200, 0, -1))
    return cpu_loop(lambda: sorted(data, key=lambda x: sort_key(x))[0])


# zlib: zlib_driver -> zlib.compress (C) -> deflate (libz)
def zlib_driver():
    data = bytes((i * 7919) % 251 for i in range(1 << 18))
    return cpu_loop(lambda: len(zlib.compress(data, 9)))


# gen: gen_driver -> producer (a generator, resumed by the for loop)
def producer():
    while True:
        yield spin(20000)


def gen_driver():
    g = producer()
    return cpu_loop(lambda: next(g))


# raise: raise_driver -> thrower, which raises after its work; caught
def thrower():
    spin(20000)
    raise ValueError("expected")


def raise_once():
    try:
        thrower()
    except ValueError:
        return 1
    return 0


def raise_driver():
    return cpu_loop(raise_once)


# recurse: rec_driver -> recurse x 200 -> recurse_leaf
def recurse_leaf():
    return spin(20000)


def recurse(n):
    if n == 0:
        return recurse_leaf()
    return recurse(n - 1)


def rec_driver():
    return cpu_loop(lambda: recurse(199))


# init: init_driver -> Initer() -> Initer.__init__ -> init_leaf (3.13 runs
# a specialized __init__ call under a shim frame of the interpreter's own)
def init_leaf():
    return spin(20000)


class Initer:
    def __init__(self):
        self.v = init_leaf()


def init_driver():
    return cpu_loop(lambda: Initer().v)


# exec: functions made and dropped in a loop; f<i> calls h<i % 2>
def h0():
    return spin(3000)


def h1():
    return spin(3000)


def exec_driver():
    def one():
        i = one.i = one.i + 1
        ns = {"h0": h0, "h1": h1}
        exec("def f%d():\n    return h%d()\n" % (i, i % 2), ns)
        return ns["f%d" % i]()
    one.i = 0
    return cpu_loop(one)


# secret: a secret in a live local variable of the hot loop's caller
def hold_secrets():
    secret = "XYZZY-quux-sekrit-0451-PLUGH"
    word = 0x5EC2E7C0DEC0FFEE
    r = cpu_loop(lambda: spin(20000))
    return len(secret) + (word & 1) + (r & 0)


mode = sys.argv[1]
if mode == "main":
    print("main", main_driver() > 0)
    sys.exit(3)
elif mode == "thread":
    t = threading.Thread(target=thread_work)
    t.start()
    t.join()
    print("thread done")
else:
    print(mode, {"sort": sort_driver, "zlib": zlib_driver, "gen": gen_driver, "raise": raise_driver,
                 "recurse": rec_driver, "init": init_driver, "exec": exec_driver, "secret": hold_secrets}[mode]() > 0)

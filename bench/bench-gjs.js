// bench-gjs.js: JavaScript work timed inside a GLib loop (bench-gjs runs it
// with and without lagwatch's JavaScript frames). Calls of every kind the
// profiling stack's bookkeeping touches: interpreted and compiled
// functions, recursion, methods, closures, and calls into C through GObject
// Introspection (GJS labels each). Prints one line: "ms <wall time>".
const GLib = imports.gi.GLib;

function fib(n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

class Counter {
    constructor() { this.n = 0; }
    add(k) { this.n += k; return this; }
}

function work(rounds) {
    let total = 0;
    for (let r = 0; r < rounds; r++) {
        total += fib(22);
        const c = new Counter();
        for (let i = 0; i < 20000; i++)
            c.add(i & 7);
        total += c.n;
        const adders = [1, 2, 3].map(k => x => x + k);
        for (let i = 0; i < 20000; i++)
            total = adders[i % 3](total) % 1000003;
        for (let i = 0; i < 2000; i++)
            total += GLib.get_monotonic_time() & 1;
    }
    return total;
}

const rounds = parseInt(GLib.getenv('LW_BENCH_ROUNDS') || '20');
const loop = new GLib.MainLoop(null, false);
GLib.idle_add(GLib.PRIORITY_DEFAULT, () => {
    work(2);  // warm the JIT up
    const start = GLib.get_monotonic_time();
    work(rounds);
    print(`ms ${(GLib.get_monotonic_time() - start) / 1000}`);
    loop.quit();
    return GLib.SOURCE_REMOVE;
});
loop.run();

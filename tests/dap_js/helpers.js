// Shared by the tier-2 DAP tests: a DebugClient on `python -m dyndbg.dap` (or on
// a program's own `--listen` server) that keeps every event it receives, so
// that a test can wait for an event that may already have arrived
// (DebugClient.waitForEvent only sees later ones), and that fails a request
// when the other side has ended instead of waiting for ever.
'use strict';

const cp = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const ROOT = path.resolve(__dirname, '..', '..');
const PYTHON = process.env.DYNDBG_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');
const TIMEOUT = 60000;   // importing torch and compiling take seconds, not DebugClient's 5

// An empty HOME: a developer's ~/.dyndbgrc must not change what the tests see.
const HOME = fs.mkdtempSync(path.join(os.tmpdir(), 'dyndbg-dapjs-home-'));

function adapterEnv() {
    const env = { ...process.env, HOME, NO_COLOR: '1', PYTHONUNBUFFERED: '1' };
    delete env.PYTHONBREAKPOINT;
    // This tree's dyndbg, whatever the interpreter's editable install points at.
    env.PYTHONPATH = ROOT + (env.PYTHONPATH ? path.delimiter + env.PYTHONPATH : '');
    return env;
}

// The program run without dyndbg: its stdout and exit status.
function plainRun(script) {
    return new Promise((resolve) => {
        cp.execFile(PYTHON, [script], { cwd: ROOT, env: adapterEnv() }, (err, stdout) => {
            resolve({ stdout, code: err ? err.code : 0 });
        });
    });
}

const live = new Set();

class Session {
    constructor() {
        // ONE executable argument: DebugClient spawns (runtime, [executable]).
        this.dc = new DebugClient(PYTHON, '-mdyndbg.dap', 'dyndbg', { cwd: ROOT, env: adapterEnv() });
        this.dc.defaultTimeout = TIMEOUT;
        this.events = [];
        this.waiters = [];
        this.stderr = '';
        this.stdout = '';
        this.disconnected = false;
        const emit = this.dc.emit.bind(this.dc);
        this.dc.emit = (name, message) => {
            if (message && message.type === 'event') {
                this.events.push(message);
                this.waiters = this.waiters.filter((w) => !w(message));
            }
            return emit(name, message);
        };
    }

    // Watches the process on the other side: its stderr, and its end.
    watch(proc) {
        // 'close' comes after the process's last output has been read.
        this.closed = new Promise((resolve) => {
            proc.on('close', (code, signal) => resolve({ code, signal }));
        });
        proc.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-4000); });
        live.add(this);
    }

    // The stdio adapter, `python -m dyndbg.dap`, as VS Code starts it.
    async start() {
        await this.dc.start();
        this.watch(this.dc._adapterProcess);
        return this;
    }

    // `python -m dyndbg --listen 127.0.0.1:0 --wait-for-client SCRIPT`, and a
    // connection to the port it announces (VS Code's DebugAdapterServer).
    async listen(script) {
        const args = ['-m', 'dyndbg', '--listen', '127.0.0.1:0', '--wait-for-client', script];
        this.program = cp.spawn(PYTHON, args, { cwd: ROOT, env: adapterEnv() });
        this.program.stdout.on('data', (d) => { this.stdout += d; });
        this.watch(this.program);
        const port = await this.unlessEnded(new Promise((resolve) => {
            const seen = (d) => {
                const m = /dyndbg: listening on [^\s:]+:(\d+)/.exec(this.stderr);
                if (m) {
                    this.program.stderr.off('data', seen);
                    resolve(Number(m[1]));
                }
            };
            this.program.stderr.on('data', seen);
        }), 'announcing its port');
        await this.dc.start(port);
        this.dc._socket.on('error', (err) => { this.stderr += `\n(socket: ${err.message})`; });
        return port;
    }

    // A request, failing with the other side's stderr if it ends first.
    request(command, args) {
        if (command === 'disconnect') {
            this.disconnected = true;
        }
        return this.unlessEnded(this.dc.send(command, args), `answering '${command}'`);
    }

    unlessEnded(promise, what) {
        const ended = this.closed.then(({ code, signal }) => {
            throw new Error(`the adapter ended (exit ${code}, signal ${signal}) before ${what}; `
                            + `its stderr:\n${this.stderr}`);
        });
        return Promise.race([promise, ended]);
    }

    // The first event `name` (from index `from` of the log) that `pred` accepts.
    event(name, pred = () => true, from = 0, timeout = TIMEOUT) {
        const ok = (e) => e.event === name && pred(e);
        const found = this.events.slice(from).find(ok);
        if (found) {
            return Promise.resolve(found);
        }
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => {
                reject(new Error(`no '${name}' event in ${timeout} ms; adapter stderr:\n${this.stderr}`));
            }, timeout);
            this.waiters.push((e) => {
                if (!ok(e)) {
                    return false;
                }
                clearTimeout(timer);
                resolve(e);
                return true;
            });
        });
    }

    // initialize + launch + configurationDone, and the first stop when `stop`.
    async launch(args, stop = true) {
        const dc = this.dc;
        const steps = [dc.configurationSequence(), dc.launch({ cwd: ROOT, ...args })];
        if (stop) {
            steps.push(this.event('stopped'));
        }
        const results = await this.unlessEnded(Promise.all(steps), 'the launch sequence ended');
        return stop ? results[2] : undefined;
    }

    async top(threadId) {
        const st = await this.request('stackTrace', { threadId, startFrame: 0, levels: 20 });
        return st.body.stackFrames[0];
    }

    // One step request and the stop it ends with.
    async step(command, args) {
        const from = this.events.length;
        const [, stopped] = await Promise.all([this.request(command, args), this.event('stopped', () => true, from)]);
        return stopped;
    }

    // Disconnect and let the program finish (it must not stay behind on a
    // two-core machine), then end the adapter whatever happened.
    async close() {
        try {
            if (!this.disconnected) {
                await this.request('disconnect', {});
            }
            await Promise.race([this.closed, new Promise((resolve) => setTimeout(resolve, 30000).unref())]);
        } catch (err) {
            // The test has already failed or passed; this only cleans up.
        }
        this.kill();
    }

    kill() {
        live.delete(this);
        this.dc.stopAdapter();
        if (this.program) {
            this.program.kill();
        }
    }
}

// Ends what a failed or timed-out test left running, so that node exits.
function killAll() {
    for (const s of [...live]) {
        s.kill();
    }
    fs.rmSync(HOME, { recursive: true, force: true });
}

module.exports = { ROOT, PYTHON, TIMEOUT, Session, adapterEnv, plainRun, killAll };

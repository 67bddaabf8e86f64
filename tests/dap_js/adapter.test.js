// Tier 2: Microsoft's DebugClient (the harness VS Code's own adapters are
// tested with) drives `python -m dyndbg.dap` on samples/graph_break.py.
// Run: node --test tests/dap_js/   (DYNDBG_PYTHON picks the interpreter)
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, Session, plainRun, killAll } = require('./helpers');

const SAMPLE = path.join(ROOT, 'samples', 'graph_break.py');
const LIMIT = { timeout: 240000 };   // a hung request fails its test instead of the whole run

after(killAll);

function samePath(a, b) {
    return fs.realpathSync(a) === fs.realpathSync(b);
}

// What VS Code sends once the adapter says `initialized`: the breakpoints
// (here a function breakpoint on resume functions; its answer is returned),
// then configurationDone.
async function configureResumeBreakpoint(s) {
    await s.dc.waitForEvent('initialized');
    const r = await s.request('setFunctionBreakpoints', {
        breakpoints: [{ name: 'torch_dynamo_resume_in_*' }],
    });
    await s.request('configurationDone');
    return r.body.breakpoints[0];
}

// The code object an address belongs to: address = ((serial + 1) << 20) | byte offset.
function codeOf(address) {
    return BigInt(address) >> 20n;
}

test('stops at entry, shows the stack and the disassembly, steps one instruction', LIMIT, async () => {
    const s = await new Session().start();
    try {
        const stopped = await s.launch({ program: SAMPLE, stopOnEntry: true });
        assert.strictEqual(stopped.body.reason, 'entry');
        const threadId = stopped.body.threadId;
        const threads = await s.request('threads');
        assert.ok(threads.body.threads.some((t) => t.id === threadId), JSON.stringify(threads.body));

        const st = await s.request('stackTrace', { threadId, startFrame: 0, levels: 20 });
        const frames = st.body.stackFrames;
        assert.ok(frames.length >= 1 && frames.length <= 20, `${frames.length} frames`);
        const top = frames[0];
        assert.strictEqual(top.name, 'f [0/0]');
        const compiled = await s.event('dyndbg/compile', (e) => e.body.label === top.name);
        assert.deepStrictEqual([compiled.body.kind, compiled.body.recompile], ['transformed', false]);
        assert.ok(top.source && samePath(top.source.path, SAMPLE), JSON.stringify(top.source));
        const ip = top.instructionPointerReference;
        assert.match(ip, /^0x[0-9a-f]+$/);

        const d = await s.request('disassemble', {
            memoryReference: ip, offset: 0, instructionOffset: -200, instructionCount: 400,
        });
        const rows = d.body.instructions;
        assert.strictEqual(rows.length, 400);
        const addresses = rows.map((r) => BigInt(r.address));
        for (let i = 1; i < addresses.length; i++) {
            assert.ok(addresses[i] > addresses[i - 1], `addresses not ascending at ${i}: ${rows[i - 1].address} ${rows[i].address}`);
        }
        const here = rows.find((r) => r.address === ip);
        assert.ok(here, `the IP ${ip} is not among the 400 addresses`);
        assert.notStrictEqual(here.presentationHint, 'invalid');

        const next = await s.step('next', { threadId, granularity: 'instruction' });
        assert.strictEqual(next.body.reason, 'step');
        const ip2 = (await s.top(next.body.threadId)).instructionPointerReference;
        assert.notStrictEqual(ip2, ip, 'next (instruction) did not move the IP');
        assert.strictEqual(codeOf(ip2), codeOf(ip), 'one instruction on, still in f [0/0]');
        assert.ok(BigInt(ip2) > BigInt(ip), `${ip2} is not after ${ip}`);

        // Not recording: stepBack says how to record instead of moving.
        await assert.rejects(s.request('stepBack', { threadId }), /record/);
    } finally {
        await s.close();
    }
});

test('a pending function breakpoint on a resume function binds, then stops', LIMIT, async () => {
    const s = await new Session().start();
    try {
        let pending;
        await s.unlessEnded(Promise.all([
            configureResumeBreakpoint(s).then((bp) => { pending = bp; }),
            s.dc.launch({ cwd: ROOT, program: SAMPLE }),
        ]), 'the launch sequence ended');
        assert.strictEqual(pending.verified, false, JSON.stringify(pending));
        assert.strictEqual(typeof pending.id, 'number', JSON.stringify(pending));
        assert.ok(pending.message, 'a pending breakpoint says why it is not verified');

        const bound = await s.event('breakpoint', (e) => e.body.breakpoint.id === pending.id);
        assert.strictEqual(bound.body.reason, 'changed');
        assert.strictEqual(bound.body.breakpoint.verified, true);

        const stopped = await s.event('stopped');
        assert.strictEqual(stopped.body.reason, 'function breakpoint');
        assert.ok((stopped.body.hitBreakpointIds || []).includes(pending.id), JSON.stringify(stopped.body));
        const top = await s.top(stopped.body.threadId);
        assert.match(top.name, /^torch_dynamo_resume_in_f_at_\d+ \[\d+\/\d+\]$/);
        // What the extension's compile log shows: the resume function, a graph break.
        const compiled = await s.event('dyndbg/compile', (e) => e.body.label === top.name);
        assert.strictEqual(compiled.body.kind, 'resume');
    } finally {
        await s.close();
    }
});

test('with record: true, stepBack returns to the instruction before', LIMIT, async () => {
    const s = await new Session().start();
    try {
        const stopped = await s.launch({ program: SAMPLE, stopOnEntry: true, record: true });
        const threadId = stopped.body.threadId;
        const step = { threadId, granularity: 'instruction' };
        await s.step('next', step);
        const ip1 = (await s.top(threadId)).instructionPointerReference;
        await s.step('next', step);
        const ip2 = (await s.top(threadId)).instructionPointerReference;
        assert.notStrictEqual(ip2, ip1);

        const back = await s.step('stepBack', step);
        assert.strictEqual(back.body.threadId, threadId);
        assert.strictEqual((await s.top(threadId)).instructionPointerReference, ip1);
    } finally {
        await s.close();
    }
});

test('disconnect lets the program finish with its own output and exit status', LIMIT, async () => {
    // The same program without dyndbg, run meanwhile: what the session must reproduce.
    const plain = plainRun(SAMPLE);
    const s = await new Session().start();
    try {
        await s.launch({ program: SAMPLE, stopOnEntry: true });
        await s.request('disconnect', {});
        const exited = await s.event('exited');
        await s.event('terminated');
        assert.deepStrictEqual(await s.closed, { code: 0, signal: null },
                               `the adapter's own exit; its stderr:\n${s.stderr}`);
        const expected = await plain;
        assert.strictEqual(expected.code, 0, 'the plain run failed');
        assert.strictEqual(exited.body.exitCode, expected.code);
        const stdout = s.events
            .filter((e) => e.event === 'output' && e.body.category === 'stdout')
            .map((e) => e.body.output).join('');
        assert.match(stdout, /^call 1: /m);
        assert.strictEqual(stdout, expected.stdout);
    } finally {
        await s.close();
    }
});

test("attach to `python -m dyndbg --listen` as the extension's DebugAdapterServer does", LIMIT, async () => {
    const plain = plainRun(SAMPLE);
    const s = new Session();
    try {
        const port = await s.listen(SAMPLE);
        let pending;
        await s.unlessEnded(Promise.all([
            configureResumeBreakpoint(s).then((bp) => { pending = bp; }),
            // What VS Code sends: the whole configuration, `connect` included.
            s.request('initialize', { adapterID: 'dyndbg', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' })
                .then(() => s.request('attach', {
                    type: 'dyndbg', request: 'attach', name: 'attach', connect: { host: '127.0.0.1', port },
                })),
        ]), 'the attach sequence ended');
        const stopped = await s.event('stopped');
        assert.strictEqual(stopped.body.reason, 'function breakpoint');
        assert.ok((stopped.body.hitBreakpointIds || []).includes(pending.id), JSON.stringify(stopped.body));

        // Detached, the program finishes as it would have without dyndbg.
        await s.request('disconnect', {});
        const ended = await s.closed;
        const expected = await plain;
        assert.deepStrictEqual(ended, { code: expected.code, signal: null }, s.stderr);
        assert.strictEqual(s.stdout, expected.stdout);
    } finally {
        await s.close();
    }
});

test("the VS Code extension's package.json is valid", () => {
    const dir = path.join(ROOT, 'editors', 'vscode');
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    for (const field of ['name', 'publisher', 'version', 'main', 'contributes']) {
        assert.ok(pkg[field], `package.json has no ${field}`);
    }
    assert.match(pkg.engines && pkg.engines.vscode, /^\^\d+\.\d+\.\d+$/);
    assert.ok(fs.existsSync(path.join(dir, pkg.main)), `main ${pkg.main} does not exist`);
    assert.ok(pkg.activationEvents.includes('onDebugResolve:dyndbg'));

    const debuggers = pkg.contributes.debuggers;
    assert.strictEqual(debuggers.length, 1);
    const dbg = debuggers[0];
    assert.strictEqual(dbg.type, 'dyndbg');
    assert.ok(dbg.label);
    // Without it VS Code offers no "Open Disassembly View" in Python editors.
    assert.deepStrictEqual(dbg.languages, ['python']);
    const launch = Object.keys(dbg.configurationAttributes.launch.properties).sort();
    assert.deepStrictEqual(launch,
        ['args', 'catchTrace', 'cwd', 'env', 'module', 'program', 'python', 'record',
            'stopOnEntry']);
    const connect = dbg.configurationAttributes.attach.properties.connect;
    assert.deepStrictEqual(Object.keys(connect.properties).sort(), ['host', 'port']);

    const configs = [...dbg.initialConfigurations, ...dbg.configurationSnippets.map((s) => s.body)];
    for (const c of configs) {
        assert.strictEqual(c.type, 'dyndbg');
        assert.ok(c.name, JSON.stringify(c));
    }
    const requests = (list) => list.map((c) => c.request).sort();
    assert.deepStrictEqual(requests(dbg.initialConfigurations), ['attach', 'launch']);
    assert.deepStrictEqual(requests(dbg.configurationSnippets.map((s) => s.body)), ['attach', 'launch']);
    for (const snippet of dbg.configurationSnippets) {
        assert.ok(snippet.label && snippet.description, JSON.stringify(snippet));
    }

    // Every contributed command is registered by extension.js.
    const source = fs.readFileSync(path.join(dir, pkg.main), 'utf8');
    for (const { command } of pkg.contributes.commands) {
        assert.ok(source.includes(`registerCommand('${command}'`), `${command} is not registered`);
    }
});

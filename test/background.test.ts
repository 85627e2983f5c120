import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { copyPolyglot, removeTree, runCli } from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

describe('quarry index --background', () => {
  it('returns after the lexical phase and embeds in a detached process', async () => {
    const root = copyPolyglot(trees);
    const env = { QUARRY_EMBED: 'local' };
    const r = runCli(['index', root, '--background'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /embedding in the background \(pid \d+\)/);
    // lexical search works at once
    const search = runCli(['search', '--json', '--mode', 'lexical', 'HandleHealth'], { cwd: root, env });
    assert.equal(JSON.parse(search.stdout).results[0].path, 'server.go');
    let status: { embedding: { refined: number; files: number }; run: { state: string } } | undefined;
    for (let i = 0; i < 120; i++) {
      status = JSON.parse(runCli(['status', '--json', '--root', root], { env }).stdout);
      if (
        status!.embedding.files > 0 &&
        status!.embedding.refined === status!.embedding.files &&
        status!.run.state === 'idle'
      )
        break;
      await sleep(500);
    }
    assert.equal(status?.embedding.refined, 17);
    const hybrid = JSON.parse(
      runCli(['search', '--json', 'load settings from a file'], { cwd: root, env }).stdout,
    );
    assert.equal(hybrid.mode, 'hybrid');
  });
});

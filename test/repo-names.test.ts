// One rule for repository names, and store URLs that cannot be read are bad input (regression: `*`, `../etc`,
// `a b`, 300 characters were accepted as names, `''` fell back silently to the folder's name, and a port of 99999
// was exit 6 "Invalid URL").
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkRepoName } from '../src/config/config.ts';
import { defaultRepoKey } from '../src/store/open.ts';
import { makeTree, removeTree, runCli, runCliAsync } from './helpers.ts';

describe('repository names and store URLs', () => {
  let root: string;
  before(() => {
    root = makeTree({ 'a.py': 'x = 1\n' });
  });
  after(() => removeTree(root));

  it('accepts owner/name shapes and refuses the rest in one line, exit 2, before connecting', () => {
    for (const ok of ['acme/api', 'honojs/hono', 'a', 'my.repo_2-x', 'group/sub/project'])
      assert.equal(checkRepoName(ok), ok);
    for (const bad of [
      '*',
      '../etc',
      'a b',
      'x'.repeat(300),
      '',
      '/lead',
      'trail/',
      'a//b',
      '.hidden',
      'a/../b',
      'acme/alpha.',
      'acme./alpha',
      'acme/alpha/',
    ]) {
      assert.throws(() => checkRepoName(bad), /is not a repository name/, JSON.stringify(bad));
      // port 1: nothing listens there, and nothing is tried, the name is refused first
      const r = runCli(['--store', 'postgres://127.0.0.1:1/x', '--repo', bad, 'status'], { cwd: root });
      assert.equal(r.code, 2, `${JSON.stringify(bad)}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1);
      assert.match(r.stderr, /^quarry: ".*" is not a repository name: use letters/);
    }
  });

  it('makes a valid default name of any folder', () => {
    for (const folder of ['my project (copy) ', 'ends.with.dots...']) {
      const odd = makeTree({ [`${folder}/b.py`]: 'y = 2\n' });
      try {
        const key = defaultRepoKey(join(odd, folder));
        assert.equal(checkRepoName(key), key);
        assert.doesNotMatch(key, /\s/);
      } finally {
        removeTree(odd);
      }
    }
  });

  it('says a store URL with an impossible port is bad input, without echoing it', () => {
    const r = runCli(['--store', 'postgres://bob:hunter2@127.0.0.1:99999/x', 'status'], { cwd: root });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^quarry: the store URL cannot be read: check its host and port/);
    assert.doesNotMatch(r.stderr, /hunter2/);
  });
});

describe('a remote that does not answer', () => {
  it('is said in one line after QUARRY_REMOTE_TIMEOUT seconds (regression: a frozen server held the client 60 s)', async () => {
    // accepts connections and never answers
    const frozen = createServer(() => {});
    await new Promise<void>((r) => frozen.listen(0, '127.0.0.1', () => r()));
    const port = (frozen.address() as { port: number }).port;
    try {
      const started = Date.now();
      const r = await runCliAsync(['--remote', `http://127.0.0.1:${port}`, 'search', 'x'], {
        env: { QUARRY_REMOTE_TIMEOUT: '1' },
      });
      assert.equal(r.code, 11, r.stderr);
      assert.match(
        r.stderr,
        /^quarry: quarry at http:\/\/127\.0\.0\.1:\d+\/ did not answer within 1 s: try again, or check the server\n$/,
      );
      assert.ok(Date.now() - started < 30_000);
      const bad = await runCliAsync(['--remote', `http://127.0.0.1:${port}`, 'search', 'x'], {
        env: { QUARRY_REMOTE_TIMEOUT: 'soon' },
      });
      assert.equal(bad.code, 2, bad.stderr);
    } finally {
      frozen.close();
    }
  });
});

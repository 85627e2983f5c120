import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Embedder } from '../src/embed/types.ts';

const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

/** The behaviour every Embedder must have: `embedderContract(() => an embedder)`. */
export function embedderContract(open: () => Promise<Embedder>): void {
  it('returns one normalised vector of its dimension per text, in order', async () => {
    const e = await open();
    const texts = ['alpha beta', 'function parseConfig(path) { return JSON.parse(read(path)) }', 'a', ''];
    const vecs = await e.embed(texts, 'document');
    assert.equal(vecs.length, texts.length);
    for (const v of vecs) {
      assert.equal(v.length, e.dimension);
      assert.ok(Math.abs(norm(v) - 1) < 1e-3, `norm ${norm(v)}`);
    }
    assert.deepEqual(await e.embed([], 'document'), []);
    await e.close();
  });

  it('gives a text the same vector alone or in any batch', async () => {
    const e = await open();
    const text = 'read the settings file and return a dictionary';
    const [alone] = await e.embed([text], 'document');
    const batch = await e.embed(
      ['x'.repeat(3000), 'short', text, 'another text of middling length here'],
      'document',
    );
    assert.ok(cos(alone!, batch[2]!) > 0.999);
    await e.close();
  });

  it('truncates long input instead of failing', async () => {
    const e = await open();
    const [v] = await e.embed(['word '.repeat(5000)], 'document');
    assert.equal(v!.length, e.dimension);
    assert.ok(e.countTokens('word '.repeat(5000)) <= e.maxTokens);
    await e.close();
  });

  it('has a stable id and dimension', async () => {
    const a = await open();
    const b = await open();
    assert.equal(a.id, b.id);
    assert.ok(a.id.length > 0);
    assert.ok(a.dimension > 0);
    await a.close();
    await b.close();
  });
}

import {
  Item,
  RecordError,
  ToolItem,
  argumentsPreview,
  footerText,
  asUnfinished,
  formatCount,
  formatDuration,
  parseRecord,
  planUpdate,
  toView
} from '../src/model';
import { GOLDEN_NAMES, golden, goldenEvent } from './golden';
import { Json, run, text, thinking, tool } from './records';

function view(record: Record<string, unknown>) {
  return toView(parseRecord(record));
}

function firstTool(items: Item[]): ToolItem {
  const found = items.find(item => item.kind === 'tool');
  if (!found || found.kind !== 'tool') {
    throw new Error('no tool item');
  }
  return found;
}

/**
 * Compare what parseRecord made of `raw` with `raw` itself: every field the writer wrote is
 * read under the same name with the same value, and nothing is invented beside them.
 */
function differences(parsed: unknown, raw: unknown, path: string): string[] {
  if (!isPlainObject(parsed) || !isPlainObject(raw)) {
    if (Array.isArray(parsed) && Array.isArray(raw) && parsed.length === raw.length) {
      return parsed.flatMap((item, i) => differences(item, raw[i], `${path}[${i}]`));
    }
    return JSON.stringify(parsed) === JSON.stringify(raw) ? [] : [`${path} differs`];
  }
  const found: string[] = [];
  for (const key of Object.keys(raw)) {
    if (!(key in parsed)) {
      found.push(`model.ts drops ${path}.${key}`);
    } else if (`${path}.${key}` === '$.replayed') {
      found.push(...differences(parsed.replayed, (raw.replayed as Json).note, '$.replayed'));
    } else {
      found.push(...differences(parsed[key], raw[key], `${path}.${key}`));
    }
  }
  for (const key of Object.keys(parsed)) {
    const neutral = key === 'chosen_at' && parsed[key] === '';
    if (!(key in raw) && !neutral) {
      found.push(`model.ts reads ${path}.${key}, which the writer does not write`);
    }
  }
  return found;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

describe('the golden records the notebook layer wrote', () => {
  it('are all there', () => {
    expect(GOLDEN_NAMES).toEqual([
      'always_allowed',
      'code_with_controls',
      'images',
      'plain_answer',
      'schema_answer',
      'tool_approved',
      'tool_denied',
      'unfinished'
    ]);
  });

  it.each(GOLDEN_NAMES)('%s is read field for field, nothing lost or invented', name => {
    const raw = golden(name);
    expect(differences(parseRecord(raw), raw, '$')).toEqual([]);
  });

  it.each(GOLDEN_NAMES)('%s draws without an error', name => {
    expect(view(golden(name)).items.length).toBeGreaterThan(0);
  });
});

describe('parseRecord', () => {
  it.each([
    [null, 'expected a JSON object, got object'],
    [[1, 2], 'expected a JSON object, got an array'],
    ['{"version": 1}', 'expected a JSON object, got string']
  ])('rejects %p with a message saying what it got', (data, message) => {
    expect(() => parseRecord(data)).toThrow(new RecordError(message));
  });

  it('names the version it reads when a newer writer sends another', () => {
    expect(() => parseRecord({ ...run([]), version: 2 })).toThrow(
      /unsupported run record version 2 \(this extension reads version 1; upgrade aimu-jupyter\)/
    );
  });

  it('draws a half-written record with neutral defaults instead of failing', () => {
    const record = parseRecord({ version: 1, events: [{ type: 'tool', id: 'c1' }] });
    expect(record).toMatchObject({
      prompt: '',
      model: '',
      status: 'running',
      error: null,
      usage: { input_tokens: 0, output_tokens: 0 },
      duration_s: 0
    });
    expect(record.events[0]).toMatchObject({
      type: 'tool',
      name: '(unnamed tool)',
      status: 'running',
      progress: [],
      result: null,
      images: [],
      approval: null,
      children: []
    });
  });

  it('skips event types it does not know and keeps the rest in order', () => {
    const record = parseRecord(
      run([text('a'), { type: 'citation', url: 'x' }, 42 as unknown as Json, text('b')])
    );
    expect(record.events).toEqual([text('a'), text('b')]);
  });

  it('drops images that are not base64 images, so nothing else reaches a data: URL', () => {
    const [png] = goldenEvent('images').images as Json[];
    const record = parseRecord(
      run([
        tool('c1', 'shot', {
          images: [
            { ...png, description: 'ok' },
            { ...png, mime_type: 'text/html', description: 'html' },
            { ...png, data: '"><script>', description: 'broken' }
          ]
        })
      ])
    );
    const event = record.events[0];
    expect(event.type === 'tool' && event.images.map(i => i.description)).toEqual(['ok']);
  });

  it('replaces unknown statuses and approvers by safe ones', () => {
    const record = parseRecord(
      run([tool('c1', 'x', { status: 'exploded', approval: { approved: 'yes', by: 'cat' } })], {
        status: 'weird'
      })
    );
    expect(record.status).toBe('running');
    expect(record.events[0]).toMatchObject({
      status: 'running',
      approval: { approved: false, by: 'policy', reason: '' }
    });
  });

  it('keeps a sub-agent run nested under the tool that spawned it', () => {
    const record = parseRecord(
      run([
        tool('c1', 'spawn_sub_agent', { children: [text('child says hi'), tool('c2', 'search')] })
      ])
    );
    const spawn = record.events[0];
    expect(spawn.type === 'tool' && spawn.children.map(c => c.type)).toEqual(['text', 'tool']);
  });
});

describe('toView', () => {
  it('keys text by position and tools by call id, unique even for repeated ids', () => {
    const items = view(
      run([text('a'), tool('c1', 'x'), thinking('hm'), tool('c1', 'y'), tool('', 'z')])
    ).items;
    expect(items.map(i => i.key)).toEqual([
      'text:0',
      'tool:c1',
      'thinking:2',
      'tool:c1@3',
      'tool@4'
    ]);
  });

  it('describes a tool card: name, status, one-line preview, pretty arguments, progress', () => {
    const card = firstTool(
      view(
        run([
          tool('c1', 'get_webpage', {
            arguments: { url: 'https://example.org', depth: 2 },
            status: 'awaiting_approval',
            progress: ['fetching', { bytes: 512 }]
          })
        ])
      ).items
    );
    expect(card).toMatchObject({
      name: 'get_webpage',
      status: 'awaiting_approval',
      statusLabel: 'awaiting approval',
      preview: 'url="https://example.org", depth=2',
      argumentsJson: '{\n  "url": "https://example.org",\n  "depth": 2\n}',
      progress: ['fetching', '{"bytes":512}'],
      result: null,
      isError: false
    });
  });

  it.each([
    ['tool_approved', 'Approved by you'],
    ['tool_denied', 'Denied by you (use the data folder)']
  ])('says who decided a call the user answered: %s', (name, label) => {
    const card = firstTool(view(golden(name)).items);
    expect(card.approval).toEqual({ approved: name === 'tool_approved', label });
  });

  it.each([
    [{ approved: true, by: 'policy', reason: 'read-only' }, 'Approved by policy (read-only)'],
    [
      { approved: false, by: 'timeout', reason: '' },
      'Timed out waiting for approval: denied by policy'
    ]
  ])('says who decided a call and why: %p', (approval, label) => {
    const card = firstTool(view(run([tool('c1', 'run_command', { approval })])).items);
    expect(card.approval).toEqual({ approved: approval.approved, label });
  });

  it('marks a tool result as an error whether the flag or the status says so', () => {
    const items = view(
      run([
        tool('a', 'x', { is_error: true, result: 'boom', status: 'done' }),
        tool('b', 'y', { status: 'error', result: 'bad' })
      ])
    ).items as ToolItem[];
    expect(items.map(i => i.isError)).toEqual([true, true]);
  });

  it('turns tool images into data URLs with the description as alt text', () => {
    const card = firstTool(view(golden('images')).items);
    const [png, svg] = goldenEvent('images').images as Json[];
    expect(card.images).toEqual([
      { src: `data:image/png;base64,${png.data}`, alt: 'sales by month' },
      { src: `data:image/svg+xml;base64,${svg.data}`, alt: 'logo' }
    ]);
    expect(card.imagesNote).toBe(
      'logo: not sent, models take PNG, JPEG, GIF or WebP, not image/svg+xml'
    );
  });

  it('writes a footer with model, token usage and duration', () => {
    const record = golden('plain_answer');
    const usage = record.usage as { input_tokens: number; output_tokens: number };
    const v = view({ ...record, usage: { ...usage, input_tokens: 12345 }, duration_s: 3.21 });
    expect(v.footer).toBe(`scripted · 12,345 in / ${usage.output_tokens} out tokens · 3.2 s`);
    expect(v.statusLabel).toBe('done');
  });

  it('shows a schema answer as the text the model gave', () => {
    const [answer] = view(golden('schema_answer')).items;
    expect(answer).toMatchObject({ kind: 'text' });
    expect(JSON.parse((answer as { text: string }).text)).toEqual({
      name: 'Lyon',
      population: 522000
    });
  });

  it('says in the footer which turns the response cache replayed', () => {
    const record = parseRecord({
      version: 1,
      model: 'scripted:demo',
      status: 'done',
      replayed: {
        turns: [{ iteration: 1, answered: '2026-05-01T09:30:00Z' }],
        note: 'replayed (answered 2026-05-01 09:30 UTC)'
      },
      events: []
    });
    expect(footerText(record)).toBe('scripted:demo · replayed (answered 2026-05-01 09:30 UTC)');
  });

  it("says in the footer, in the kernel's words, that the run stopped at its round limit", () => {
    const limit =
      'stopped at the limit of tool rounds (max_iterations): its last calls did not run';
    const record = parseRecord({ version: 1, model: 'scripted:demo', status: 'done', limit });
    expect(footerText(record)).toBe(`scripted:demo · ${limit}`);
    expect(footerText(parseRecord({ version: 1, model: 'm', status: 'done', limit: 7 }))).toBe('m');
  });

  it('leaves unknown parts out of the footer rather than printing zeros', () => {
    expect(view(run([])).footer).toBe('scripted:demo');
  });
});

describe('formatting', () => {
  it.each([
    [0.42, '0.4 s'],
    [59.94, '59.9 s'],
    [125.4, '2 min 05 s'],
    [3600, '60 min 00 s']
  ])('formatDuration(%p) is %p', (seconds, expected) => {
    expect(formatDuration(seconds)).toBe(expected);
  });

  it('groups thousands the same way whatever the locale', () => {
    expect([0, 999, 1000, 1234567].map(formatCount)).toEqual(['0', '999', '1,000', '1,234,567']);
  });

  it('cuts a long argument preview to one line of at most 80 characters', () => {
    const preview = argumentsPreview({ code: 'import pandas\n'.repeat(20) });
    expect(preview).toHaveLength(80);
    expect(preview.endsWith('…')).toBe(true);
    expect(preview).not.toContain('\n');
  });
});

describe('planUpdate', () => {
  it('re-renders only the growing text block while an answer streams', () => {
    const before = view(
      run([text('Intro.'), tool('c1', 'x', { status: 'done' }), text('The ans')])
    );
    const after = view(
      run([text('Intro.'), tool('c1', 'x', { status: 'done' }), text('The answer is 42')])
    );
    expect(planUpdate(before.items, after.items)).toEqual({
      steps: [
        { key: 'text:0', op: 'keep' },
        { key: 'tool:c1', op: 'keep' },
        { key: 'text:2', op: 'update' }
      ],
      removed: []
    });
  });

  it('creates nodes for new events and updates a tool whose status changed', () => {
    const before = view(run([tool('c1', 'x')]));
    const after = view(run([tool('c1', 'x', { status: 'done', result: 'ok' }), text('Done.')]));
    expect(planUpdate(before.items, after.items).steps).toEqual([
      { key: 'tool:c1', op: 'update' },
      { key: 'text:1', op: 'create' }
    ]);
  });

  it('updates a tool card when only its sub-agent run changed', () => {
    const before = view(run([tool('c1', 'spawn', { children: [text('wor')] })]));
    const after = view(run([tool('c1', 'spawn', { children: [text('working')] })]));
    expect(planUpdate(before.items, after.items).steps).toEqual([{ key: 'tool:c1', op: 'update' }]);
  });

  it('lists keys that disappeared or changed kind for removal', () => {
    const before = view(run([text('a'), text('b')]));
    const after = view(run([thinking('a')]));
    expect(planUpdate(before.items, after.items)).toEqual({
      steps: [{ key: 'thinking:0', op: 'create' }],
      removed: ['text:0', 'text:1']
    });
  });
});

describe('the readable record', () => {
  it("keeps the model's argument order after a reload sorted the keys", () => {
    const saved = tool('c1', 'send', {
      arguments: { subject: 'Hi', to: 'ada@example.org' },
      argument_names: ['to', 'subject']
    });
    const [item] = toView(parseRecord(run([saved]))).items as ToolItem[];
    expect(item.preview).toBe('to="ada@example.org", subject="Hi"');
  });

  it('previews strings without escaped quotes', () => {
    const card = tool('c1', 'add_cell', { arguments: { source: 'sales["revenue"].sum()' } });
    const [item] = toView(parseRecord(run([card]))).items as ToolItem[];
    expect(item.preview).toBe('source=\'sales["revenue"].sum()\'');
  });

  it('offers python code as a cell only once it ran', () => {
    const call = (status: string): Json =>
      tool('c1', 'python', { status, arguments: { code: 'x = 1' }, result: null });
    const code = (status: string): string | null =>
      (toView(parseRecord(run([call(status)]))).items[0] as ToolItem).code;
    expect(code('awaiting_approval')).toBeNull();
    expect(code('denied')).toBeNull();
    expect(code('stopped')).toBeNull();
    const ran = tool('c1', 'python', {
      status: 'done',
      arguments: { code: 'x = 1' },
      result: 'ok'
    });
    expect((toView(parseRecord(run([ran]))).items[0] as ToolItem).code).toBe('x = 1');
  });

  it('says who let a call through with Always allow, and where it was chosen', () => {
    const items = toView(parseRecord(golden('always_allowed'))).items as ToolItem[];
    expect(items[0].approval?.label).toBe('Allowed: Always allow, chosen here');
    expect(items[1].approval?.label).toBe(
      "Allowed: Always allow, chosen at write_file(path='a.txt', content='1')"
    );
  });

  it('reads a stop as stopped by you, calmly', () => {
    const view = toView(
      parseRecord(run([tool('c1', 'write_file', { status: 'stopped' })], { status: 'interrupted' }))
    );
    expect(view.statusLabel).toBe('stopped by you');
    expect((view.items[0] as ToolItem).statusLabel).toBe('stopped by you');
  });

  it('says a running record whose run is gone did not finish', () => {
    const record = parseRecord(golden('unfinished'));
    expect(record.status).toBe('running');
    const view = toView(asUnfinished(record));
    expect(view.statusLabel).toBe('did not finish');
    expect(view.error).toBe('did not finish: the kernel stopped');
    const card = view.items[0] as ToolItem;
    expect(card.status).toBe('error');
    expect(card.result).toBe('Not finished: the kernel stopped.');
  });
});

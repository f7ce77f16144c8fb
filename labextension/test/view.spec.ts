import { parseRecord, toView } from '../src/model';
import { DisplaySettings, MarkdownRender, PROGRESS_LIMIT, RunDom } from '../src/view';
import { goldenEvent } from './golden';
import { Json, PNG_BASE64, run, text, thinking, tool } from './records';

/** Stand-in for JupyterLab's Markdown renderer: records each call, writes the source as text. */
function recordingMarkdown() {
  const calls: { host: HTMLElement; source: string }[] = [];
  const render: MarkdownRender = async (host, source) => {
    calls.push({ host, source });
    await Promise.resolve();
    host.textContent = `md:${source}`;
  };
  return { calls, render };
}

function setup(settings: Partial<DisplaySettings> = {}) {
  const markdown = recordingMarkdown();
  const current: DisplaySettings = { collapseToolCards: true, showThinking: true, ...settings };
  const dom = new RunDom({ renderMarkdown: markdown.render, settings: () => current });
  document.body.replaceChildren(dom.node);
  const show = (record: Json) => dom.update(toView(parseRecord(record)));
  return { dom, markdown, current, show, root: dom.node };
}

function q<T extends Element = HTMLElement>(root: ParentNode, selector: string): T {
  const found = root.querySelector<T>(selector as never);
  if (!found) {
    throw new Error(`nothing matches ${selector}`);
  }
  return found as T;
}

function all(root: ParentNode, selector: string): HTMLElement[] {
  return Array.from(root.querySelectorAll<HTMLElement>(selector));
}

describe('RunDom', () => {
  it("draws a schema run's validated answer as a table, not as its JSON", async () => {
    const { show, root } = setup();
    const answer = '{"signed_by": "Ada Lovelace", "pages": 3}';
    await show(run([text(answer)]));
    expect(q(root, '.aimu-text').textContent).toBe(`md:${answer}`);
    await show(
      run([{ type: 'text', text: answer, output: { signed_by: 'Ada Lovelace', pages: 3 } }], {
        status: 'done'
      })
    );
    const rows = all(root, '.aimu-text table.aimu-output-table tr').map(row =>
      Array.from(row.children).map(cell => cell.textContent)
    );
    expect(rows).toEqual([
      ['signed_by', 'Ada Lovelace'],
      ['pages', '3']
    ]);
    expect(q(root, '.aimu-text').textContent).not.toContain('{');
  });

  it("shows a fix's prompt as the Markdown written for a person, not the model's text", async () => {
    const { show, root, markdown } = setup();
    const shown = '**You asked:** why\n\n```python\nx = 1 / 0\n```';
    await show(run([], { prompt: 'Traceback (trimmed):\n```\n^^^^\n```', prompt_markdown: shown }));
    expect(q(root, '.aimu-prompt').textContent).toBe(`md:${shown}`);
    expect(markdown.calls.map(call => call.source)).toContain(shown);
    await show(run([], { prompt: 'plain <b>text</b>' }));
    expect(q(root, '.aimu-prompt').textContent).toBe('plain <b>text</b>');
  });

  it('draws the prompt, the answer as Markdown, tool cards and the footer', async () => {
    const { show, root } = setup();
    await show(
      run(
        [
          text('Looking it up.'),
          tool('c1', 'get_webpage', {
            arguments: { url: 'https://example.org' },
            status: 'done',
            result: 'Example Domain'
          }),
          text('It is **Example Domain**.')
        ],
        { status: 'done', usage: { input_tokens: 10, output_tokens: 5 }, duration_s: 1.5 }
      )
    );
    expect(q(root, '.aimu-prompt').textContent).toBe('Which month grew fastest?');
    expect(all(root, '.aimu-text').map(n => n.textContent)).toEqual([
      'md:Looking it up.',
      'md:It is **Example Domain**.'
    ]);
    const card = q<HTMLDetailsElement>(root, 'details.aimu-tool');
    expect(card.dataset.status).toBe('done');
    expect(q(card, '.aimu-tool-name').textContent).toBe('get_webpage');
    expect(q(card, '.aimu-tool-preview').textContent).toBe('url="https://example.org"');
    expect(q(card, '.aimu-badge').textContent).toBe('done');
    expect(q(card, '.aimu-args-table').textContent).toBe('urlhttps://example.org');
    expect(q(card, '.aimu-result-text').textContent).toBe('Example Domain');
    expect(q(root, '.aimu-footer-text').textContent).toBe(
      'scripted:demo · 10 in / 5 out tokens · 1.5 s'
    );
    expect(q(root, '.aimu-run-status').textContent).toBe('done');
  });

  it('shows what the user told the agent where it was delivered, as text', async () => {
    const { show, root, markdown } = setup();
    const said = { type: 'user_message', text: 'Use <b>metric</b> units.' };
    await show(
      run([tool('c1', 'measure', { status: 'done', result: '3 ft' }), said, text('1 m.')])
    );
    const kinds = all(root, '.aimu-events > *').map(n => n.className.split(' ')[0]);
    expect(kinds).toEqual(['aimu-tool', 'aimu-user-message', 'aimu-text']);
    expect(q(root, '.aimu-user-message-label').textContent).toBe('You, during the run:');
    expect(q(root, '.aimu-user-message-text').textContent).toBe('Use <b>metric</b> units.');
    expect(q(root, '.aimu-user-message').querySelector('b')).toBeNull();
    expect(markdown.calls.map(c => c.source)).toEqual(['1 m.']);
  });

  it('re-renders only the block that grew while the answer streams', async () => {
    const { show, root, markdown } = setup();
    await show(run([text('First part.'), tool('c1', 'x', { status: 'done' }), text('Sec')]));
    const [firstBlock, card] = [q(root, '.aimu-text'), q(root, '.aimu-tool')];
    markdown.calls.length = 0;

    for (const partial of ['Second', 'Second part', 'Second part.']) {
      await show(run([text('First part.'), tool('c1', 'x', { status: 'done' }), text(partial)]));
    }

    expect(markdown.calls.map(c => c.source)).toEqual(['Second', 'Second part', 'Second part.']);
    expect(new Set(markdown.calls.map(c => c.host)).size).toBe(1);
    expect(q(root, '.aimu-text')).toBe(firstBlock);
    expect(q(root, '.aimu-tool')).toBe(card);
    expect(all(root, '.aimu-text')[1].textContent).toBe('md:Second part.');
  });

  it('skips sources that a slower render made stale and ends on the newest', async () => {
    const calls: string[] = [];
    let release: () => void = () => undefined;
    const slow: MarkdownRender = (host, source) => {
      calls.push(source);
      return new Promise<void>(resolve => {
        release = () => {
          host.textContent = source;
          resolve();
        };
      });
    };
    const dom = new RunDom({
      renderMarkdown: slow,
      settings: () => ({ collapseToolCards: true, showThinking: true })
    });
    const show = (s: string) => dom.update(toView(parseRecord(run([text(s)]))));

    const first = show('a');
    void show('ab');
    const last = show('abc');
    release();
    await Promise.resolve();
    await Promise.resolve();
    release();
    await Promise.all([first, last]);

    expect(calls).toEqual(['a', 'abc']);
    expect(q(dom.node, '.aimu-text').textContent).toBe('abc');
  });

  it('keeps a card the user opened open across updates', async () => {
    const { show, root } = setup({ collapseToolCards: true });
    await show(run([tool('c1', 'search')]));
    const card = q<HTMLDetailsElement>(root, 'details.aimu-tool');
    expect(card.open).toBe(false);

    card.open = true;
    await show(run([tool('c1', 'search', { progress: ['page 1'] })]));
    await show(run([tool('c1', 'search', { status: 'done', result: '3 hits' }), text('Found 3.')]));

    expect(q(root, 'details.aimu-tool')).toBe(card);
    expect(card.open).toBe(true);
    expect(q(card, '.aimu-badge').textContent).toBe('done');
  });

  it('starts cards open when the user turned collapsing off', async () => {
    const { show, root } = setup({ collapseToolCards: false });
    await show(run([tool('c1', 'search')]));
    expect(q<HTMLDetailsElement>(root, 'details.aimu-tool').open).toBe(true);
  });

  it('opens a card when it starts waiting for approval and shows the decision after', async () => {
    const { show, root } = setup({ collapseToolCards: true });
    await show(run([tool('c1', 'run_command', { arguments: { command: 'rm -rf build' } })]));
    const card = q<HTMLDetailsElement>(root, 'details.aimu-tool');
    expect(q(card, '.aimu-tool-approval').hidden).toBe(true);

    await show(run([tool('c1', 'run_command', { status: 'awaiting_approval' })]));
    expect(card.open).toBe(true);
    expect(q(card, '.aimu-badge').textContent).toBe('awaiting approval');

    await show(
      run([
        tool('c1', 'run_command', {
          status: 'denied',
          approval: { approved: false, by: 'user', reason: 'not on this machine' }
        })
      ])
    );
    const approval = q(card, '.aimu-tool-approval');
    expect(approval.hidden).toBe(false);
    expect(approval.textContent).toBe('Denied by you (not on this machine)');
    expect(approval.classList.contains('aimu-denied')).toBe(true);
    expect(card.dataset.status).toBe('denied');
  });

  it('hides the parts of a card that have nothing to show yet', async () => {
    const { show, root } = setup({ collapseToolCards: false });
    await show(run([tool('c1', 'search', { arguments: { q: 'x' } })]));
    const hidden = (selector: string) => q(root, selector).hidden;
    expect(
      [
        '.aimu-tool-approval',
        '.aimu-tool-progress',
        '.aimu-tool-result',
        '.aimu-tool-images',
        '.aimu-tool-children'
      ].map(hidden)
    ).toEqual([true, true, true, true, true]);
    expect(q(root, '.aimu-tool-args').hidden).toBe(false);
  });

  it('appends progress lines without redrawing the earlier ones', async () => {
    const { show, root } = setup();
    await show(run([tool('c1', 'crawl', { progress: ['page 1'] })]));
    const firstLine = q(root, '.aimu-progress-list li');
    await show(run([tool('c1', 'crawl', { progress: ['page 1', 'page 2', { page: 3 }] })]));

    const lines = all(root, '.aimu-progress-list li');
    expect(lines.map(l => l.textContent)).toEqual(['page 1', 'page 2', '{"page":3}']);
    expect(lines[0]).toBe(firstLine);
  });

  it('shows only the newest progress lines of a chatty tool and says how many it hid', async () => {
    const { show, root } = setup();
    const progress = Array.from({ length: PROGRESS_LIMIT + 5 }, (_, i) => `line ${i}`);
    await show(run([tool('c1', 'crawl', { progress })]));

    const lines = all(root, '.aimu-progress-list li');
    expect(lines).toHaveLength(PROGRESS_LIMIT);
    expect(lines[0].textContent).toBe('line 5');
    expect(q(root, '.aimu-progress-trimmed').textContent).toBe('5 earlier lines not shown');
  });

  it('marks an error result and draws returned images with their descriptions', async () => {
    const { show, root } = setup();
    await show(
      run([
        tool('c1', 'plot', {
          status: 'error',
          result: "Tool 'plot' raised an error: ValueError: no data",
          is_error: true,
          images: [{ data: PNG_BASE64, mime_type: 'image/png', description: 'empty axes' }]
        })
      ])
    );
    const result = q(root, '.aimu-tool-result');
    expect(result.classList.contains('aimu-is-error')).toBe(true);
    expect(q(result, '.aimu-section-label').textContent).toBe('Error');
    const img = q<HTMLImageElement>(root, '.aimu-tool-image');
    expect(img.getAttribute('src')).toBe(`data:image/png;base64,${PNG_BASE64}`);
    expect(img.alt).toBe('empty axes');
  });

  it('nests a sub-agent run inside the card of the call that spawned it', async () => {
    const { show, root } = setup();
    const spawn = (children: Json[]) =>
      run([tool('c1', 'spawn_sub_agent', { arguments: { task: 'summarise' }, children })]);
    await show(spawn([tool('c2', 'get_webpage')]));
    const inner = q(root, '.aimu-tool .aimu-tool-children .aimu-tool');

    await show(spawn([tool('c2', 'get_webpage', { status: 'done' }), text('Summary.')]));

    const outer = q(root, '.aimu-events > .aimu-tool');
    const children = q(outer, '.aimu-tool-children');
    expect(children.hidden).toBe(false);
    expect(children.getAttribute('aria-label')).toBe('Sub-agent run of spawn_sub_agent');
    expect(q(children, '.aimu-tool')).toBe(inner);
    expect(q(inner, '.aimu-badge').textContent).toBe('done');
    expect(q(children, '.aimu-text').textContent).toBe('md:Summary.');
  });

  it('hides thinking blocks when the setting is turned off, without redrawing', async () => {
    const { show, root, dom, current } = setup({ showThinking: true });
    await show(run([thinking('Let me check.'), text('Answer.')]));
    expect(root.classList.contains('aimu-hide-thinking')).toBe(false);
    expect(q(root, '.aimu-thinking-text').textContent).toBe('Let me check.');

    current.showThinking = false;
    dom.applySettings();
    expect(root.classList.contains('aimu-hide-thinking')).toBe(true);
  });

  it('shows the run error and the final status when a run fails', async () => {
    const { show, root } = setup();
    await show(run([text('Partial')]));
    expect(q(root, '.aimu-run-error').hidden).toBe(true);

    await show(run([text('Partial')], { status: 'error', error: 'RateLimitError: slow down' }));
    const error = q(root, '.aimu-run-error');
    expect(error.hidden).toBe(false);
    expect(error.getAttribute('role')).toBe('alert');
    expect(error.textContent).toBe('RateLimitError: slow down');
    expect(root.dataset.status).toBe('error');
    expect(q(root, '.aimu-run-status').textContent).toBe('failed');
  });

  it('never puts record text into the DOM as HTML outside the Markdown renderer', async () => {
    const { show, root } = setup({ collapseToolCards: false });
    const payload = '<img src=x onerror="window.hacked=1">';
    await show(
      run(
        [tool('c1', payload, { arguments: { q: payload }, result: payload, progress: [payload] })],
        {
          prompt: payload,
          error: payload
        }
      )
    );
    expect(root.querySelector('img')).toBeNull();
    expect(q(root, '.aimu-prompt').textContent).toBe(payload);
  });

  it('shows code arguments as code blocks, line by line, and the others as a table', async () => {
    const { show, root } = setup();
    const source = 'total = 0\nfor i in range(10):\n    total += i\nprint(total)';
    await show(
      run([
        tool('c1', 'python', { arguments: { code: source }, code: { code: 'python' } }),
        tool('c2', 'write_file', {
          arguments: { path: 'a.txt', content: 'line 1\nline 2' },
          argument_names: ['path', 'content'],
          code: { content: '' }
        })
      ])
    );
    const [python, write] = all(root, '.aimu-tool');
    const block = q(python, 'pre.aimu-code code');
    expect(block.textContent).toBe(source);
    expect(block.className).toBe('language-python');
    expect(q(python, '.aimu-tool-preview').textContent).toBe('code=total = 0 … (4 lines)');
    expect(q(write, '.aimu-args-table').textContent).toBe('patha.txt');
    expect(q(write, 'pre.aimu-code').textContent).toBe('line 1\nline 2');
  });

  it("renders code from the kernel's fenced Markdown, and shows controls the kernel made visible", async () => {
    const { show, root, markdown } = setup();
    const card = goldenEvent('code_with_controls');
    await show(run([card]));
    const fenced = (card.code_markdown as Record<string, string>).code;
    expect(markdown.calls.map(call => call.source)).toContain(fenced);
    expect(q(root, '.aimu-code-block').textContent).toBe(`md:${fenced}`);
    expect(q(root, '.aimu-tool-preview').textContent).toContain('<U+202E>');
    expect(root.textContent).not.toContain('\u202e');
    expect(root.textContent).not.toContain('\x1b');
    expect(q(root, '.aimu-result-text').textContent).toContain('\\x1b[1mdone');
  });

  it('makes every collapsible part reachable by keyboard', async () => {
    const { show, root } = setup();
    await show(run([thinking('hm'), tool('c1', 'x', { children: [tool('c2', 'y')] })]));
    // <summary> is focusable and toggles its <details> with Enter and Space in every browser.
    const toggles = all(root, 'details > summary');
    expect(toggles.map(s => s.className)).toEqual([
      'aimu-thinking-summary',
      'aimu-tool-summary',
      'aimu-tool-summary'
    ]);
    expect(root.getAttribute('role')).toBe('region');
    expect(q(root, '.aimu-run-status').getAttribute('aria-live')).toBe('polite');
  });
});

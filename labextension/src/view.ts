/**
 * The DOM for one agent run, kept in step with successive view models.
 *
 * Each event owns a node found by its key; an update touches only nodes whose content
 * changed (usually the last text block and one tool card), so a streaming answer costs one
 * Markdown render of the growing block per update, not a redraw of the run. Open/closed
 * state of tool cards survives updates because their nodes are never rebuilt.
 */

import { ArgumentItem, Item, RunView, TextItem, ToolItem, planUpdate } from './model';

/** Renders Markdown into `host` (JupyterLab's renderer in the lab, a stand-in in tests). */
export type MarkdownRender = (host: HTMLElement, source: string) => Promise<void>;

export interface DisplaySettings {
  /** Start tool cards closed: one line each, opened on demand. */
  collapseToolCards: boolean;
  /** Show the model's thinking blocks (closed) among the answer. */
  showThinking: boolean;
}

export const DEFAULT_SETTINGS: DisplaySettings = { collapseToolCards: true, showThinking: true };

/**
 * Puts `source` in a new code cell below the notebook cell that holds `anchor`; false when
 * `anchor` is in no notebook cell (a console, a file viewer).
 */
export type InsertCell = (anchor: HTMLElement, source: string) => boolean;

export interface ViewOptions {
  renderMarkdown: MarkdownRender;
  /** Read when a node is made, so a settings change applies to cards made afterwards. */
  settings: () => DisplaySettings;
  /** Given, python tool cards get an "Insert as cell below" button. */
  insertCell?: InsertCell;
}

/** Progress lines kept in a card; older ones are summarised in one line. */
export const PROGRESS_LIMIT = 100;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Renders the newest source only: sources that arrive while a render runs replace each other. */
class MarkdownBlock {
  private wanted = '';
  private shown: string | null = null;
  private busy = false;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly host: HTMLElement,
    private readonly render: MarkdownRender
  ) {}

  set(source: string): Promise<void> {
    this.wanted = source;
    if (!this.busy) {
      this.busy = true;
      this.done = this.drain();
    }
    return this.done;
  }

  private async drain(): Promise<void> {
    while (this.shown !== this.wanted) {
      const source = this.wanted;
      try {
        await this.render(this.host, source);
      } catch {
        this.host.textContent = source;
      }
      this.shown = source;
    }
    this.busy = false;
  }
}

interface ItemNode {
  readonly node: HTMLElement;
  update(item: Item, pending: Promise<void>[]): void;
}

class TextNode implements ItemNode {
  readonly node = el('div', 'aimu-text jp-RenderedHTMLCommon jp-RenderedMarkdown');
  private readonly block: MarkdownBlock;

  constructor(options: ViewOptions) {
    this.block = new MarkdownBlock(this.node, options.renderMarkdown);
  }

  update(item: Item, pending: Promise<void>[]): void {
    const { text, output } = item as TextItem;
    const drawn = this.block.set(text);
    // Once the streamed text is drawn (a render may be under way), the table takes its place.
    pending.push(output ? drawn.then(() => this.node.replaceChildren(outputTable(output))) : drawn);
  }
}

/** A `--schema` run's validated answer: one row per field. */
function outputTable(rows: [string, string][]): HTMLElement {
  const table = el('table', 'aimu-args-table aimu-output-table');
  table.setAttribute('aria-label', 'The validated answer');
  for (const [name, value] of rows) {
    const row = el('tr');
    const head = el('th');
    head.append(el('code', undefined, name));
    row.append(head, el('td', 'aimu-arg-value', value));
    table.append(row);
  }
  return table;
}

class ThinkingNode implements ItemNode {
  readonly node = el('details', 'aimu-thinking');
  private readonly body = el('div', 'aimu-thinking-text');

  constructor() {
    this.node.append(el('summary', 'aimu-thinking-summary', 'Thinking'), this.body);
  }

  update(item: Item): void {
    this.body.textContent = (item as TextItem).text;
  }
}

/** A message the user sent during the run, shown where the agent received it. */
class UserMessageNode implements ItemNode {
  readonly node = el('div', 'aimu-user-message');
  private readonly body = el('span', 'aimu-user-message-text');

  constructor() {
    this.node.append(el('span', 'aimu-user-message-label', 'You, during the run:'), this.body);
  }

  update(item: Item): void {
    this.body.textContent = (item as TextItem).text;
  }
}

class ToolNode implements ItemNode {
  readonly node = el('details', 'aimu-tool');
  private readonly name = el('span', 'aimu-tool-name');
  private readonly preview = el('span', 'aimu-tool-preview');
  private readonly badge = el('span', 'aimu-badge');
  private readonly approval = el('div', 'aimu-tool-approval');
  private readonly args = el('div', 'aimu-tool-args-body');
  private readonly progressSection = el('section', 'aimu-tool-progress');
  private readonly progressList = el('ol', 'aimu-progress-list');
  private readonly progressTrimmed = el('p', 'aimu-progress-trimmed');
  private readonly resultSection = el('section', 'aimu-tool-result');
  private readonly resultLabel = el('div', 'aimu-section-label');
  private readonly result = el('pre', 'aimu-result-text');
  private readonly images = el('div', 'aimu-tool-images');
  private readonly imagesNote = el('p', 'aimu-tool-images-note');
  private readonly insert = el('div', 'aimu-tool-insert');
  private readonly insertButton = el(
    'button',
    'aimu-insert-cell jp-Button',
    'Insert as cell below'
  );
  private readonly insertStatus = el('span', 'aimu-insert-status');
  private readonly childrenSection = el('div', 'aimu-tool-children');
  private readonly children: ItemList;
  private last: ToolItem | null = null;

  constructor(private readonly options: ViewOptions) {
    const summary = el('summary', 'aimu-tool-summary');
    summary.append(this.name, this.preview, this.badge);

    const argsBlock = el('section', 'aimu-tool-args');
    argsBlock.append(el('div', 'aimu-section-label', 'Arguments'), this.args);

    this.progressSection.append(
      el('div', 'aimu-section-label', 'Progress'),
      this.progressTrimmed,
      this.progressList
    );
    this.resultSection.append(this.resultLabel, this.result);
    this.children = new ItemList(options);
    this.childrenSection.setAttribute('role', 'group');
    this.childrenSection.append(
      el('div', 'aimu-section-label', 'Sub-agent run'),
      this.children.node
    );
    this.approval.setAttribute('role', 'note');
    this.imagesNote.setAttribute('role', 'note');
    this.insertButton.type = 'button';
    this.insertButton.title = "Put this call's code in a new cell below the agent's cell";
    this.insertStatus.setAttribute('aria-live', 'polite');
    this.insertButton.addEventListener('click', () => this.insertCode());
    this.insert.append(this.insertButton, this.insertStatus);
    this.insert.hidden = true;

    const body = el('div', 'aimu-tool-body');
    body.append(
      this.approval,
      argsBlock,
      this.insert,
      this.progressSection,
      this.resultSection,
      this.images,
      this.imagesNote,
      this.childrenSection
    );
    this.node.append(summary, body);
    this.node.open = !options.settings().collapseToolCards;
  }

  update(item: Item, pending: Promise<void>[]): void {
    const tool = item as ToolItem;
    const last = this.last;
    if (tool.status !== last?.status) {
      this.node.dataset.status = tool.status;
      this.badge.className = `aimu-badge aimu-badge--${tool.status}`;
      this.badge.textContent = tool.statusLabel;
      if (tool.status === 'awaiting_approval') {
        this.node.open = true;
      }
    }
    if (tool.name !== last?.name) {
      this.name.textContent = tool.name;
      this.childrenSection.setAttribute('aria-label', `Sub-agent run of ${tool.name}`);
    }
    if (tool.argumentsJson !== last?.argumentsJson) {
      this.preview.textContent = tool.preview;
      this.args.replaceChildren(...argumentNodes(tool.args, this.options.renderMarkdown, pending));
    }
    if (last === null || tool.approval?.label !== last.approval?.label) {
      this.approval.hidden = tool.approval === null;
      this.approval.textContent = tool.approval?.label ?? '';
      this.approval.className = `aimu-tool-approval ${
        tool.approval?.approved ? 'aimu-approved' : 'aimu-denied'
      }`;
    }
    this.updateProgress(tool.progress, last?.progress ?? []);
    if (tool.result !== last?.result || tool.isError !== last?.isError) {
      this.resultSection.hidden = tool.result === null;
      this.resultSection.classList.toggle('aimu-is-error', tool.isError);
      this.resultLabel.textContent = tool.isError ? 'Error' : 'Result';
      this.result.textContent = tool.result ?? '';
    }
    this.updateImages(tool, last);
    this.imagesNote.hidden = !tool.imagesNote;
    this.imagesNote.textContent = tool.imagesNote;
    this.insert.hidden = tool.code === null || !this.options.insertCell;
    this.childrenSection.hidden = tool.children.length === 0;
    this.children.update(tool.children, pending);
    this.last = tool;
  }

  private insertCode(): void {
    const code = this.last?.code;
    if (!code || !this.options.insertCell) {
      return;
    }
    const inserted = this.options.insertCell(this.node, code);
    this.insertStatus.textContent = inserted
      ? 'Inserted below the agent cell.'
      : 'No notebook cell to insert below here.';
  }

  private updateProgress(next: string[], previous: string[]): void {
    this.progressSection.hidden = next.length === 0;
    const start = Math.max(0, next.length - PROGRESS_LIMIT);
    const appendOnly =
      start === 0 &&
      next.length >= previous.length &&
      previous.every((line, i) => line === next[i]);
    if (appendOnly) {
      for (const line of next.slice(previous.length)) {
        this.progressList.append(el('li', undefined, line));
      }
    } else {
      this.progressList.replaceChildren(
        ...next.slice(start).map(line => el('li', undefined, line))
      );
    }
    this.progressTrimmed.hidden = start === 0;
    this.progressTrimmed.textContent = start ? `${start} earlier lines not shown` : '';
  }

  private updateImages(tool: ToolItem, last: ToolItem | null): void {
    const key = (t: ToolItem): string => t.images.map(i => i.src + i.alt).join('\n');
    if (last !== null && key(tool) === key(last)) {
      return;
    }
    this.images.hidden = tool.images.length === 0;
    this.images.replaceChildren(
      ...tool.images.map(image => {
        const img = el('img', 'aimu-tool-image');
        img.src = image.src;
        img.alt = image.alt;
        img.title = image.alt;
        return img;
      })
    );
  }
}

/**
 * A call's arguments: a small table of the plain ones, then each that is code as a block,
 * rendered from the kernel's fenced Markdown when given (JupyterLab highlights it) and as
 * plain monospace text otherwise; renders under way are added to `pending`.
 */
export function argumentNodes(
  args: readonly ArgumentItem[],
  render?: MarkdownRender,
  pending: Promise<void>[] = []
): HTMLElement[] {
  const nodes: HTMLElement[] = [];
  const plain = args.filter(arg => arg.language === null);
  if (plain.length) {
    const table = el('table', 'aimu-args-table');
    for (const arg of plain) {
      const row = el('tr');
      const name = el('th');
      name.append(el('code', undefined, arg.name));
      row.append(name, el('td', 'aimu-arg-value', arg.text));
      table.append(row);
    }
    nodes.push(table);
  }
  for (const arg of args.filter(a => a.language !== null)) {
    const label = el('div', 'aimu-code-label');
    label.append(el('code', undefined, arg.name));
    if (arg.language) {
      label.append(` (${arg.language})`);
    }
    const pre = el('pre', 'aimu-code');
    pre.append(el('code', arg.language ? `language-${arg.language}` : undefined, arg.text));
    if (render && arg.markdown) {
      const block = el('div', 'aimu-code-block jp-RenderedHTMLCommon jp-RenderedMarkdown');
      block.append(pre);
      pending.push(render(block, arg.markdown).catch(() => block.replaceChildren(pre)));
      nodes.push(label, block);
    } else {
      nodes.push(label, pre);
    }
  }
  return nodes;
}

function createNode(item: Item, options: ViewOptions): ItemNode {
  switch (item.kind) {
    case 'text':
      return new TextNode(options);
    case 'thinking':
      return new ThinkingNode();
    case 'user_message':
      return new UserMessageNode();
    case 'tool':
      return new ToolNode(options);
  }
}

/** An ordered, keyed list of event nodes (the run's events, or a sub-agent's). */
class ItemList {
  readonly node = el('div', 'aimu-events');
  private readonly nodes = new Map<string, ItemNode>();
  private items: readonly Item[] = [];

  constructor(private readonly options: ViewOptions) {}

  update(items: readonly Item[], pending: Promise<void>[]): void {
    const plan = planUpdate(this.items, items);
    for (const key of plan.removed) {
      this.nodes.get(key)?.node.remove();
      this.nodes.delete(key);
    }
    let cursor = this.node.firstChild;
    plan.steps.forEach((step, index) => {
      let entry = this.nodes.get(step.key);
      if (step.op === 'create' || !entry) {
        entry = createNode(items[index], this.options);
        this.nodes.set(step.key, entry);
      }
      if (step.op !== 'keep') {
        entry.update(items[index], pending);
      }
      if (entry.node === cursor) {
        cursor = cursor.nextSibling;
      } else {
        this.node.insertBefore(entry.node, cursor);
      }
    });
    this.items = items;
  }
}

/** The whole run: prompt, events, error and footer. */
export class RunDom {
  readonly node = el('div', 'aimu-run');
  private readonly prompt = el('div', 'aimu-prompt');
  private readonly promptBlock: MarkdownBlock;
  private readonly events: ItemList;
  private readonly error = el('div', 'aimu-run-error');
  private readonly status = el('span', 'aimu-run-status');
  private readonly footer = el('span', 'aimu-footer-text');
  private last: RunView | null = null;

  constructor(private readonly options: ViewOptions) {
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'Agent run');
    this.events = new ItemList(options);
    this.promptBlock = new MarkdownBlock(this.prompt, options.renderMarkdown);
    this.error.setAttribute('role', 'alert');
    this.status.setAttribute('aria-live', 'polite');
    const footer = el('div', 'aimu-footer');
    footer.append(this.status, this.footer);
    this.node.append(this.prompt, this.events.node, this.error, footer);
    this.applySettings();
  }

  /** Bring the DOM in line with `view`; resolves once every Markdown block it touched is drawn. */
  update(view: RunView): Promise<void> {
    const last = this.last;
    const pending: Promise<void>[] = [];
    if (view.prompt !== last?.prompt || view.promptMarkdown !== last?.promptMarkdown) {
      this.prompt.hidden = !view.prompt;
      this.prompt.classList.toggle('jp-RenderedHTMLCommon', view.promptMarkdown !== null);
      this.prompt.classList.toggle('jp-RenderedMarkdown', view.promptMarkdown !== null);
      if (view.promptMarkdown !== null) {
        pending.push(this.promptBlock.set(view.promptMarkdown));
      } else {
        this.prompt.textContent = view.prompt;
      }
    }
    if (view.status !== last?.status) {
      this.node.dataset.status = view.status;
      this.status.className = `aimu-run-status aimu-badge aimu-badge--${view.status}`;
      this.status.textContent = view.statusLabel;
    }
    if (view.error !== last?.error) {
      this.error.hidden = view.error === null;
      this.error.textContent = view.error ?? '';
    }
    if (view.footer !== last?.footer) {
      this.footer.textContent = view.footer;
    }
    this.events.update(view.items, pending);
    this.last = view;
    return Promise.all(pending).then(() => undefined);
  }

  /** Re-read the settings that apply to nodes already drawn. */
  applySettings(): void {
    this.node.classList.toggle('aimu-hide-thinking', !this.options.settings().showThinking);
  }
}

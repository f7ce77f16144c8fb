/**
 * The MIME renderer: a Lumino widget that JupyterLab's output area creates once per output
 * and then calls `renderModel` on for every `update_display_data` of the same display id.
 */

import { renderMarkdown } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { NotebookBridge, SharedNotebookLike } from './bridge';
import { InboxField } from './inbox';
import { CommLike } from './inbox';
import { MIME_TYPE, RecordError, RunRecord, asUnfinished, parseRecord, toView } from './model';
import { NotebookCells } from './notebook';
import { Settings } from './settings';
import { RunDom } from './view';

/** Ahead of Markdown (60), HTML (50) and plain text, so the rich view wins in JupyterLab. */
export const RENDERER_RANK = 40;
/** The kernel's answer to "does run X still go on?" (aimu_jupyter/view/_inbox_field.py). */
export const RUNNING_TARGET = 'aimu.run';

export class RunRenderer extends Widget implements IRenderMime.IRenderer {
  private readonly dom: RunDom;
  private readonly problem = document.createElement('div');
  /** The inbox the record names while its run takes messages, and the field drawn for it. */
  private inboxKey: string | null = null;
  private inbox: InboxField | null = null;
  private running = false;
  /** The running record last drawn, the run asked about, and whether it is known gone. */
  private record: RunRecord | null = null;
  private asked: string | null = null;
  private gone = false;

  constructor(
    private readonly options: IRenderMime.IRendererOptions,
    private readonly settings: Settings,
    private readonly notebook?: NotebookCells
  ) {
    super();
    this.addClass('aimu-RunRenderer');
    this.dom = new RunDom({
      // The answer is model output, which may quote fetched pages: always sanitise it.
      renderMarkdown: (host, source) =>
        renderMarkdown({
          host,
          source,
          trusted: false,
          sanitizer: options.sanitizer,
          resolver: options.resolver,
          linkHandler: options.linkHandler,
          shouldTypeset: this.isAttached,
          latexTypesetter: options.latexTypesetter,
          markdownParser: options.markdownParser ?? null,
          translator: options.translator
        }),
      settings: () => settings.current,
      insertCell: notebook
        ? (anchor, source) => notebook.insertBelow(anchor, [{ cell_type: 'code', source }])
        : undefined
    });
    this.problem.className = 'aimu-record-problem';
    this.problem.setAttribute('role', 'alert');
    this.problem.hidden = true;
    this.node.append(this.problem, this.dom.node);
    settings.changed.connect(this.onSettingsChanged, this);
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[this.options.mimeType] as
      { inbox?: unknown; status?: unknown } | undefined;
    const taking = data?.status === 'running' && typeof data.inbox === 'string' && data.inbox;
    this.inboxKey = taking ? (data.inbox as string) : null;
    this.running = data?.status === 'running';
    this.syncInbox();
    let record: RunRecord;
    try {
      record = parseRecord(data);
    } catch (error) {
      if (!(error instanceof RecordError)) {
        throw error;
      }
      this.problem.textContent = `Cannot draw this agent run: ${error.message}.`;
      this.problem.hidden = false;
      this.dom.node.hidden = true;
      return Promise.resolve();
    }
    this.problem.hidden = true;
    this.dom.node.hidden = false;
    this.record = record;
    this.askWhetherRunning();
    return this.dom.update(toView(this.gone ? asUnfinished(record) : record));
  }

  /**
   * A record still marked running is live only while its kernel runs it: ask the kernel
   * (comm target `aimu.run`). No kernel, a kernel that does not know the run (restarted,
   * another one) or one without aimu: the run did not finish, and the record says so.
   */
  private askWhetherRunning(): void {
    const record = this.record;
    if (!record || record.status !== 'running' || !record.run || !this.isAttached) {
      return;
    }
    if (this.asked === record.run || !this.notebook) {
      return;
    }
    this.asked = record.run;
    const kernel = this.notebook.kernelOf(this.node);
    if (!kernel) {
      this.markGone();
      return;
    }
    let comm: CommLike;
    try {
      comm = kernel.createComm(RUNNING_TARGET);
    } catch {
      this.markGone();
      return;
    }
    let answered = false;
    comm.onMsg = msg => {
      answered = true;
      const running = (msg.content.data as { running?: unknown } | null)?.running === true;
      if (!running) {
        this.markGone();
      }
      try {
        comm.close();
      } catch {
        // The kernel closes it too; nothing is left to tell it.
      }
    };
    comm.onClose = () => {
      if (!answered) {
        this.markGone();
      }
    };
    comm.open({ run: record.run });
  }

  private markGone(): void {
    this.gone = true;
    if (this.record && this.record.status === 'running' && !this.isDisposed) {
      void this.dom.update(toView(asUnfinished(this.record)));
    }
  }

  dispose(): void {
    this.inbox?.dispose();
    this.inbox = null;
    this.settings.changed.disconnect(this.onSettingsChanged, this);
    super.dispose();
  }

  protected onAfterAttach(): void {
    this.syncInbox(); // the first render may come before the output is in its notebook
    this.askWhetherRunning();
  }

  /** Draw the field for the record's inbox, or drop it once the record names none; while
   * the run goes on, let the kernel reach this notebook (bridge.ts). */
  private syncInbox(): void {
    if (this.running && this.notebook && this.isAttached) {
      const kernel = this.notebook.kernelOf(this.node);
      const shared = this.notebook.locate(this.node)?.notebook.model?.sharedModel;
      if (kernel && shared) {
        NotebookBridge.ensure(kernel, shared as unknown as SharedNotebookLike);
      }
    }
    if (this.inbox && this.inbox.key !== this.inboxKey) {
      this.inbox.dispose();
      this.inbox = null;
    }
    if (this.inbox || !this.inboxKey || !this.notebook || !this.isAttached) {
      return;
    }
    const kernel = this.notebook.kernelOf(this.node);
    if (kernel) {
      this.inbox = new InboxField(this.inboxKey, kernel);
      this.node.append(this.inbox.node);
    }
  }

  private onSettingsChanged(): void {
    this.dom.applySettings();
  }
}

/** The factory registered with JupyterLab's rendermime registry. */
export function createRendererFactory(
  settings: Settings,
  notebook?: NotebookCells
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    defaultRank: RENDERER_RANK,
    createRenderer: options => new RunRenderer(options, settings, notebook)
  };
}

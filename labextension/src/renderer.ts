/**
 * The MIME renderer: a Lumino widget that JupyterLab's output area creates once per output
 * and then calls `renderModel` on for every `update_display_data` of the same display id.
 */

import { renderMarkdown } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { MIME_TYPE, RecordError, parseRecord, toView } from './model';
import { NotebookCells } from './notebook';
import { Settings } from './settings';
import { RunDom } from './view';

/** Ahead of Markdown (60), HTML (50) and plain text, so the rich view wins in JupyterLab. */
export const RENDERER_RANK = 40;

export class RunRenderer extends Widget implements IRenderMime.IRenderer {
  private readonly dom: RunDom;
  private readonly problem = document.createElement('div');

  constructor(
    private readonly options: IRenderMime.IRendererOptions,
    private readonly settings: Settings,
    notebook?: NotebookCells
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
    let view;
    try {
      view = toView(parseRecord(model.data[this.options.mimeType]));
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
    return this.dom.update(view);
  }

  dispose(): void {
    this.settings.changed.disconnect(this.onSettingsChanged, this);
    super.dispose();
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

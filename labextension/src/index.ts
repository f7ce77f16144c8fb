/**
 * aimu-jupyter's JupyterLab plugin: registers the agent-run renderer and feeds it settings.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { createCellsFactory } from './cells';
import { createDiffFactory } from './diff';
import { NotebookCells } from './notebook';
import { createRendererFactory } from './renderer';
import { Settings } from './settings';

export { MIME_TYPE } from './model';

const PLUGIN_ID = 'aimu-jupyter:plugin';

async function loadSettings(registry: ISettingRegistry, settings: Settings): Promise<void> {
  try {
    const stored = await registry.load(PLUGIN_ID);
    const read = (): void =>
      settings.update({
        collapseToolCards: stored.get('collapseToolCards').composite as boolean,
        showThinking: stored.get('showThinking').composite as boolean
      });
    read();
    stored.changed.connect(read);
  } catch (reason) {
    console.warn(`${PLUGIN_ID}: settings not loaded, using defaults`, reason);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Draws aimu agent runs (streamed answer, tool cards, approvals, sub-agents) and puts ' +
    'the cells an agent proposes or exports below its cell.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [ISettingRegistry],
  activate: async (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    settingRegistry: ISettingRegistry | null
  ): Promise<void> => {
    const settings = new Settings();
    if (settingRegistry) {
      // Loaded before the factory is added, so the first runs drawn already follow them.
      await loadSettings(settingRegistry, settings);
    }
    const notebook = new NotebookCells(app.shell);
    rendermime.addFactory(createRendererFactory(settings, notebook));
    rendermime.addFactory(createCellsFactory(notebook));
    rendermime.addFactory(createDiffFactory());
  }
};

export default plugin;

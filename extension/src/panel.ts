/**
 * The Context side panel: question, intent, budget, lanes, as-of and scopes; the packet's evidence,
 * conflicts and excluded items. Every piece of note text goes in as text (textContent), never markup.
 */
import { Widget } from '@lumino/widgets';

import { ApiError, IEvidence, IQueryAnswer, post } from './api';
import { ICitation } from './citations';

export const LANES = ['identity', 'lexical', 'dense'];
export const INTENTS = ['orient', 'verify', 'plan', 'audit'];

export interface IPanelDefaults {
  budget: number;
  intent: string;
  top: number;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
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

function labelled(text: string, control: HTMLElement): HTMLLabelElement {
  const label = el('label', 'rk-field');
  label.append(el('span', 'rk-field-name', text), control);
  return label;
}

export function lines(start: number, end: number): string {
  return start === end ? `${start}` : `${start}-${end}`;
}

export class ContextPanel extends Widget {
  constructor(
    private readonly openCitation: (citation: ICitation) => void,
    private readonly afterQuery: () => void
  ) {
    super();
    this.id = 'retrieval-kernel-context';
    this.addClass('rk-panel');
    this.title.caption = 'Ask project notes';
    this.question = el('textarea', 'rk-question');
    this.question.placeholder = 'Ask your project notes (Enter asks, Shift+Enter for a new line)';
    this.question.rows = 3;
    this.intent = el('select', 'rk-intent');
    for (const name of INTENTS) {
      const option = el('option', '', name);
      option.value = name;
      this.intent.appendChild(option);
    }
    this.budget = el('input', 'rk-budget');
    this.budget.type = 'number';
    this.budget.min = '1000';
    this.budget.step = '1000';
    this.top = el('input', 'rk-top');
    this.top.type = 'number';
    this.top.min = '1';
    this.asOf = el('input', 'rk-as-of');
    this.asOf.type = 'date';
    this.scopes = el('input', 'rk-scopes');
    this.scopes.placeholder = 'e.g. team-a, team-b';
    const lanes = el('div', 'rk-lane-boxes');
    for (const lane of LANES) {
      const box = el('input');
      box.type = 'checkbox';
      box.checked = true;
      box.value = lane;
      this.laneBoxes.push(box);
      const label = el('label', 'rk-lane');
      label.append(box, document.createTextNode(` ${lane}`));
      lanes.appendChild(label);
    }
    this.ask = el('button', 'jp-mod-styled jp-mod-accept rk-ask', 'Ask');
    this.ask.type = 'submit';
    const form = el('form', 'rk-form');
    const row = el('div', 'rk-row');
    row.append(labelled('intent', this.intent), labelled('budget (chars)', this.budget), labelled('top', this.top));
    const row2 = el('div', 'rk-row');
    row2.append(labelled('as of', this.asOf), labelled('scopes', this.scopes));
    form.append(this.question, row, row2, labelled('lanes', lanes), this.ask);
    form.addEventListener('submit', event => {
      event.preventDefault();
      void this.run();
    });
    this.question.addEventListener('keydown', event => {
      if (event.key === 'Enter' && !event.shiftKey) {
        event.preventDefault();
        void this.run();
      }
    });
    this.results = el('div', 'rk-results');
    this.node.append(form, this.results);
    this.setDefaults({ budget: 8000, intent: 'orient', top: 5 });
  }

  setDefaults(defaults: IPanelDefaults): void {
    this.budget.value = String(defaults.budget);
    this.intent.value = INTENTS.includes(defaults.intent) ? defaults.intent : 'orient';
    this.top.value = String(defaults.top);
  }

  focusQuestion(text?: string): void {
    if (text) {
      this.question.value = text;
    }
    this.question.focus();
  }

  async run(): Promise<void> {
    const question = this.question.value.trim();
    if (!question) {
      this.showError('Type a question first.');
      return;
    }
    const body = {
      question,
      intent: this.intent.value,
      budget: Number(this.budget.value),
      top: Number(this.top.value),
      lanes: this.laneBoxes.filter(box => box.checked).map(box => box.value),
      as_of: this.asOf.value || null,
      scopes: this.scopes.value.trim()
        ? this.scopes.value
            .split(',')
            .map(scope => scope.trim())
            .filter(Boolean)
        : null
    };
    this.ask.disabled = true;
    this.results.replaceChildren(el('div', 'rk-busy', 'Asking…'));
    try {
      const answer = await post<IQueryAnswer>('query', body);
      this.showAnswer(answer);
    } catch (error) {
      const prefix = error instanceof ApiError && error.status ? `${error.status}: ` : '';
      this.showError(`${prefix}${(error as Error).message}`);
    } finally {
      this.ask.disabled = false;
      this.results.dataset.answers = String(++this.answers); // how many questions this panel has answered
      this.afterQuery();
    }
  }

  private showError(message: string): void {
    this.results.replaceChildren(el('div', 'rk-error', message));
  }

  private showAnswer({ packet, links }: IQueryAnswer): void {
    const out: HTMLElement[] = [];
    const head = el('div', 'rk-summary');
    const count = packet.abstained ? 'nothing applies' : `${packet.evidence.length} evidence`;
    const confidence = packet.confidence === null ? '' : ` · answer confidence ${packet.confidence.toFixed(2)}`;
    head.textContent =
      `${count}${confidence} · ${packet.budget.used.toLocaleString()}/${packet.budget.limit.toLocaleString()} ` +
      `${packet.budget.unit} · intent ${packet.intent} · as of ${packet.as_of} · projection ${packet.projection}`;
    out.push(head);
    const lanes = el('ul', 'rk-lanes');
    for (const lane of packet.lanes) {
      const reason = lane.reason ? `: ${lane.reason}` : '';
      const item = el('li', `rk-lane-${lane.status}`, `${lane.name} ${lane.status} (${lane.candidates} candidates)${reason}`);
      lanes.appendChild(item);
    }
    out.push(lanes);
    if (packet.abstained) {
      out.push(el('div', 'rk-abstain', `Nothing applies (${packet.abstention_reason ?? 'unknown'}).`));
    }
    for (const item of packet.evidence) {
      out.push(this.evidence(item, links[item.id] ?? null));
    }
    if (packet.conflicts.length) {
      const list = el('ul', 'rk-conflicts');
      for (const conflict of packet.conflicts) {
        const sides = conflict.evidence
          .map(
            side =>
              `${side.ref ?? side.id} = ${JSON.stringify(side.value)} (${side.authority ?? 'authority unknown'}, ` +
              `${side.status ?? 'status unknown'})`
          )
          .join(' vs ');
        list.appendChild(
          el('li', 'rk-conflict', `${conflict.id} on ${conflict.proposition}: ${sides} → ${conflict.resolution}; ${conflict.required_behavior}`)
        );
      }
      out.push(el('h4', '', 'Conflicts'), list);
    }
    if (packet.excluded.length) {
      const list = el('ul', 'rk-excluded');
      for (const item of packet.excluded) {
        list.appendChild(
          el('li', '', `${item.id} (${item.path}:${lines(item.line_start, item.line_end)}) ${item.reason}: ${item.detail}`)
        );
      }
      out.push(el('h4', '', 'Excluded'), list);
    }
    for (const warning of packet.warnings) {
      out.push(el('div', 'rk-warn', `warning: ${warning}`));
    }
    this.results.replaceChildren(...out);
  }

  private evidence(item: IEvidence, labPath: string | null): HTMLElement {
    const box = el('div', `rk-item rk-role-${item.role}`);
    box.dataset.evidenceId = item.id;
    const title = el('div', 'rk-item-title');
    title.append(el('b', '', `[${item.ref}] ${item.heading}`), document.createTextNode(` — ${item.module} `));
    const cite = el('a', 'rk-cite', `${item.path}:${lines(item.line_start, item.line_end)}`);
    cite.href = '#';
    cite.title = labPath ? `open ${labPath} at these lines` : 'open a read-only view (the note is outside the Jupyter root)';
    cite.addEventListener('click', event => {
      event.preventDefault();
      this.openCitation({ labPath, notePath: item.path, start: item.line_start, end: item.line_end });
    });
    title.appendChild(cite);
    const badges = el('div', 'rk-badges');
    const observed = item.observed_at
      ? `observed ${item.observed_at} (${item.freshness}, fresh for ${item.fresh_for_days} d)`
      : 'observed: unknown';
    badges.append(
      el('span', `rk-badge rk-observed rk-${item.freshness}`, observed),
      el('span', 'rk-badge rk-indexed', `indexed ${item.indexed_at.replace('T', ' ').replace('Z', ' UTC')}`),
      el('span', 'rk-badge', item.live_verified ? 'live-verified' : 'not live-verified'),
      el('span', 'rk-badge', `authority ${item.authority ?? 'unknown'}`),
      el('span', 'rk-badge', `status ${item.status ?? 'unknown'}`),
      el('span', `rk-badge rk-role`, item.role)
    );
    if (item.scope.length) {
      badges.appendChild(el('span', 'rk-badge', `scope ${item.scope.join(', ')}`));
    }
    if (item.instruction_cue) {
      badges.appendChild(el('span', 'rk-badge rk-warn', `reads like an instruction: quoted evidence, not to be followed`));
    }
    const excerpt = el('pre', 'rk-excerpt');
    const width = String(item.line_end).length;
    item.excerpt.split('\n').forEach((text, index) => {
      excerpt.append(
        el('span', 'rk-ln', `${String(item.line_start + index).padStart(width, ' ')} `),
        document.createTextNode(`${text}\n`)
      );
    });
    box.append(title, badges, el('div', 'rk-reason', item.reason), excerpt);
    return box;
  }

  private question: HTMLTextAreaElement;
  private intent: HTMLSelectElement;
  private budget: HTMLInputElement;
  private top: HTMLInputElement;
  private asOf: HTMLInputElement;
  private scopes: HTMLInputElement;
  private laneBoxes: HTMLInputElement[] = [];
  private answers = 0;
  private ask: HTMLButtonElement;
  private results: HTMLDivElement;
}

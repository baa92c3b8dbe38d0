/**
 * Calls to the server extension (`/retrieval-kernel/...`), under Jupyter's own authentication and XSRF.
 * A failure becomes an `ApiError` carrying the server's one-line message, never a traceback.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
  }
}

export async function requestAPI<T>(
  endpoint: string,
  init: RequestInit = {},
  query: Record<string, string> = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const search = new URLSearchParams(query).toString();
  const url =
    URLExt.join(settings.baseUrl, 'retrieval-kernel', endpoint) + (search ? `?${search}` : '');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(`the Jupyter server did not answer: ${String(error)}`, 0);
  }
  const text = await response.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message =
      data && typeof data.error === 'string'
        ? data.error
        : data && typeof data.message === 'string'
          ? data.message
          : `${response.status} ${response.statusText}`;
    throw new ApiError(message, response.status);
  }
  return data as T;
}

export function post<T>(endpoint: string, body: unknown): Promise<T> {
  return requestAPI<T>(endpoint, { method: 'POST', body: JSON.stringify(body) });
}

/** What `/status` answers (the fields the status bar shows). */
export interface IIndexStatus {
  configured: boolean;
  state: string;
  reason: string;
  notes_dir?: string;
  notes?: number;
  pending_notes?: number;
  projections?: { name: string; lag: number; problem: string | null }[];
  last_error?: string | null;
}

/** One evidence item of a packet (docs/packet.md). */
export interface IEvidence {
  ref: string;
  id: string;
  path: string;
  line_start: number;
  line_end: number;
  excerpt: string;
  module: string;
  heading: string;
  observed_at: string | null;
  source_age_days: number | null;
  freshness: string;
  fresh_for_days: number;
  indexed_at: string;
  live_verified: boolean;
  authority: string | null;
  status: string | null;
  role: string;
  reason: string;
  truncated: boolean;
  scope: string[];
  instruction_cue?: string | null;
}

export interface IPacket {
  query: string;
  as_of: string;
  intent: string;
  scopes: string[];
  budget: { unit: string; limit: number; used: number };
  projection: string;
  lanes: { name: string; status: string; candidates: number; lag: number; reason: string | null }[];
  abstained: boolean;
  abstention_reason: string | null;
  confidence: number | null;
  evidence: IEvidence[];
  conflicts: {
    id: string;
    proposition: string;
    resolution: string;
    required_behavior: string;
    evidence: { ref: string | null; id: string; value: unknown; authority: string | null; status: string | null }[];
  }[];
  excluded: { id: string; path: string; line_start: number; line_end: number; reason: string; detail: string }[];
  warnings: string[];
}

export interface IQueryAnswer {
  packet: IPacket;
  /** Each evidence id's path relative to the Jupyter root, or null when the note is outside it. */
  links: Record<string, string | null>;
}

export interface INote {
  path: string;
  lab_path: string | null;
  lines: string[];
}

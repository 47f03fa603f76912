import {
  createContext,
  Fragment,
  useContext,
  useEffect,
  useId,
  useMemo,
  useRef,
  useState,
  type ComponentPropsWithoutRef,
  type KeyboardEvent,
  type ReactNode,
} from "react";
import Markdown from "react-markdown";
import { quoteOf } from "../citations";
import {
  api,
  followAnswer,
  positionAfter,
  stopAnswer,
  streamMessage,
  type Message,
  type Schemas,
  type Source,
  type StreamHandlers,
} from "../api/client";
import remarkGfm from "remark-gfm";
import remarkMath from "remark-math";
import { afterMarker, citationNumber, dollarMath, linkCitations } from "../citations";
import AnswerActions from "./AnswerActions";
import { AttachmentList, useAttachments } from "./Attachments";
import { MentionList, mentionAt, optionId, useDocumentMatches, withoutMention, type Match } from "./MentionPicker";
import { Code, CodeBlock } from "./RichCode";
import { NARROW_SCREEN, useMediaQuery } from "../media";

interface Props {
  chatId: string | null;
  selectedDocumentIds: string[];
  collections: Schemas["CollectionRead"][];
  /** Above the messages: what the chat answers from. */
  header: ReactNode;
  /** In the composer: the documents picked for the next message. */
  nextMessageScope: ReactNode;
  onChatCreated(chatId: string): void;
  /** A document picked with "@" in the composer, for the next message. */
  onPickDocument(document: Match): void;
  /** The question is saved: the picks for it have been used. */
  onSent(): void;
  onAnswered(): void;
  onShowSources(sources: Source[] | null, highlighted: number | null, reveal?: boolean): void;
}

/** An answer being written, as far as it has come. */
interface Pending {
  /** The saved question of a new message (null until the server has it, or when resuming). */
  user: Message | null;
  /** The question shown above it until saved ("" when resuming: it is in the list). */
  question: string;
  text: string;
  answerId: string | null;
}

/** The chat's last questions that have no answer (failed, or stopped before their first word),
 * oldest first: what a question sent again in their place replaces. */
export function unansweredTail(list: Message[]): Message[] {
  let at = list.length;
  while (at > 0 && list[at - 1].role === "user") at -= 1;
  return list.slice(at);
}

/** An answer that could not be written, shown under its question (null: never saved). */
interface Failure {
  questionId: string | null;
  detail: string;
}

type Opener = (handlers: StreamHandlers, signal: AbortSignal) => Promise<void>;

// After a dropped connection, the reader re-attaches after these pauses, then gives up.
const RECONNECT_DELAYS_MS = [500, 1000, 2000, 4000, 8000];
const LOST_CONNECTION =
  "The connection to the server was lost. The answer is still being written there: reload the page to see it.";

function isAbort(caught: unknown): boolean {
  return caught instanceof DOMException && caught.name === "AbortError";
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = window.setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      window.clearTimeout(timer);
      reject(new DOMException("Aborted", "AbortError"));
    });
  });
}

// What a citation button does, given by the answer that holds it. The Markdown components are
// defined once, outside any render: components created anew on every render would be new
// element types to React, which would then replace every citation button, taking the
// keyboard focus away from the one just activated.
// Height a citation's preview needs above its marker before it opens below instead.
const PREVIEW_ROOM_PX = 170;
// The preview's width (styles.css: min(22rem, 70vw)) and the room kept from the column's edges.
const PREVIEW_WIDTH_PX = 352;
const PREVIEW_MARGIN_PX = 8;

/** How far (px) a preview that starts at its marker must move to stay inside the column:
 * negative near the right edge (it was clipped there), 0 where it fits. */
export function previewShift(markerLeft: number, columnLeft: number, columnRight: number, viewport: number): number {
  const width = Math.min(PREVIEW_WIDTH_PX, viewport * 0.7);
  const overflow = markerLeft + width - (columnRight - PREVIEW_MARGIN_PX);
  if (overflow <= 0) return 0;
  return -Math.min(overflow, markerLeft - (columnLeft + PREVIEW_MARGIN_PX));
}

interface Citing {
  onCite(n: number): void;
  /** In citation order; null where the reader may not see the source (a shared chat). */
  sources: (Source | null)[];
}
const CiteContext = createContext<Citing>({ onCite: () => undefined, sources: [] });

function textOf(children: ReactNode): string {
  if (typeof children === "string" || typeof children === "number") return String(children);
  return Array.isArray(children) ? children.map(textOf).join("") : "";
}

function CitationLink({ href, children }: ComponentPropsWithoutRef<"a">) {
  const { onCite, sources } = useContext(CiteContext);
  const [previewing, setPreviewing] = useState(false);
  const [below, setBelow] = useState(false);
  // Pixels the preview moves left (or right) to stay inside the conversation's column.
  const [shift, setShift] = useState(0);
  const tooltip = useId();
  const number = citationNumber(href);
  if (number === null) {
    return (
      <a href={href} target="_blank" rel="noreferrer">
        {children}
      </a>
    );
  }
  const source = sources[number - 1];
  const where = source ? [source.page != null ? `page ${source.page}` : null, source.location].filter(Boolean).join(", ") : "";
  // The quote shows on hover and on keyboard focus; Escape hides it (WCAG 1.4.13). It opens
  // above the marker, or below it when the conversation has no room above.
  function show(marker: HTMLElement) {
    const column = marker.closest(".messages")?.getBoundingClientRect();
    const at = marker.getBoundingClientRect();
    setBelow(at.top - (column?.top ?? 0) < PREVIEW_ROOM_PX);
    if (column) setShift(previewShift(at.left, column.left, column.right, window.innerWidth));
    setPreviewing(true);
  }
  return (
    <span className="cite-wrap" onMouseEnter={(event) => show(event.currentTarget)} onMouseLeave={() => setPreviewing(false)}>
      <button
        className="cite"
        onClick={() => {
          setPreviewing(false);
          onCite(number);
        }}
        // Keyboard focus only: a click opens the source itself, the quote would only repeat it.
        onFocus={(event) => event.currentTarget.matches(":focus-visible") && show(event.currentTarget)}
        onBlur={() => setPreviewing(false)}
        onKeyDown={(event) => event.key === "Escape" && setPreviewing(false)}
        aria-label={source === null ? `Source ${number}: a document you may not read` : `Show source ${number}`}
        aria-describedby={source ? tooltip : undefined}
      >
        [{number}]
      </button>
      {afterMarker(textOf(children))}
      {source && (
        <span
          id={tooltip}
          role="tooltip"
          className={`cite-preview${below ? " below" : ""}`}
          style={shift ? { left: `${shift}px` } : undefined}
          hidden={!previewing}
        >
          <strong>{source.document_name}</strong>
          {where && <span className="muted"> · {where}</span>}
          <span className="cite-quote">“{quoteOf(source)}”</span>
        </span>
      )}
    </span>
  );
}

const MARKDOWN_COMPONENTS = { a: CitationLink, code: Code, pre: CodeBlock };
// Tables, strikethrough and task lists (GitHub's Markdown), and $math$.
const REMARK_PLUGINS = [remarkGfm, remarkMath];

/** An answer's Markdown, its [n] markers buttons that preview and open their sources. */
export function AnswerText({
  message,
  onCite,
}: {
  message: { content: string; sources?: (Source | null)[] | null };
  onCite(n: number): void;
}) {
  const citing = useMemo(() => ({ onCite, sources: message.sources ?? [] }), [onCite, message.sources]);
  return (
    <CiteContext.Provider value={citing}>
      <Markdown components={MARKDOWN_COMPONENTS} remarkPlugins={REMARK_PLUGINS}>
        {linkCitations(dollarMath(message.content), message.sources?.length ?? 0)}
      </Markdown>
    </CiteContext.Provider>
  );
}

/** Why an answer is not drawn from the documents, in the reader's words. */
// Why an answer quotes the documents instead of being written by the model.
const EXTRACTIVE_REASONS: Record<string, string> = {
  requested: "the best-matching sentences, no language model used",
  builtin_model: "no language model is connected (set LLM_BASE_URL for written answers)",
  uncited: "the model's answer cited nothing, so the passages are quoted instead",
  bare: "the model answered with passage numbers only, twice, so the passages are quoted instead",
};

/** The badge an answer's footer shows. The documents not answering is said as such, never as a
 * "General answer": nothing general was written (the demo model is not asked for facts). */
export function answerBadge(message: Pick<Message, "meta" | "sources">): {
  kind: "quoted" | "nearest" | "not-in-documents" | "general";
  text: string;
} {
  const notAnswered = message.meta?.evidence === "not_in_documents";
  if (message.sources?.length) {
    return notAnswered
      ? { kind: "nearest", text: "Nearest passages, not an answer" }
      : { kind: "quoted", text: "Quoted from the documents" };
  }
  return notAnswered
    ? { kind: "not-in-documents", text: "Not in your documents" }
    : { kind: "general", text: "General answer" };
}

const GENERAL_REASONS: Record<string, string> = {
  no_documents: "there are no documents to search yet",
  no_match: "no passage of the documents matched the question",
  not_cited: "the answer did not use the passages found",
  insufficient_information: "the documents do not say",
  rag_disabled: "documents were switched off for this message",
  retrieval_unavailable: "the document search was unavailable",
};

/** A question edited in place: Enter (or Send) asks it instead, Escape cancels. */
function QuestionEditor({
  original,
  later,
  onSend,
  onCancel,
}: {
  original: string;
  later: number;
  onSend(text: string): void;
  onCancel(): void;
}) {
  const [text, setText] = useState(original);
  const id = useId();
  const changed = text.trim() && text.trim() !== original.trim();
  function submit() {
    if (text.trim()) onSend(text.trim());
  }
  return (
    <form
      className="message user question-editor"
      onSubmit={(event) => {
        event.preventDefault();
        submit();
      }}
    >
      <label htmlFor={id} className="sr-only">
        Edit your question
      </label>
      <textarea
        id={id}
        value={text}
        rows={Math.min(8, Math.max(2, text.split("\n").length))}
        autoFocus
        onChange={(event) => setText(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === "Escape") onCancel();
          else if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
            event.preventDefault();
            submit();
          }
        }}
      />
      {later > 0 && (
        <p className="muted small">
          Sending replaces this question and the {later === 1 ? "answer" : `${later} messages`} after it.
        </p>
      )}
      <div className="editor-actions">
        <button type="submit" className="primary" disabled={!text.trim()}>
          {changed ? "Send" : "Ask again"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** An answer with its footer and actions; after regenerations, arrows go through its
 * versions (the latest first shown). */
function AnswerMessage({
  message: latest,
  onShowSources,
  onRegenerate,
}: {
  message: Message;
  onShowSources: Props["onShowSources"];
  onRegenerate?: () => void;
}) {
  const versions = latest.versions ?? [];
  const [at, setAt] = useState(versions.length);
  const all = [...versions, null];
  const earlier = all[at];
  // An earlier version reads as an answer of its own: its words, sources and metadata.
  const message: Message = earlier ? { ...latest, ...earlier, status: "complete", feedback: null, versions: [] } : latest;
  const count = versions.length + 1;
  return (
    <article className="message assistant" data-testid="message-assistant">
      <AnswerText message={message} onCite={(n) => onShowSources(message.sources ?? null, n)} />
      <footer>
        {count > 1 && (
          <span className="versions" role="group" aria-label="Answer versions">
            <button className="icon" onClick={() => setAt(at - 1)} disabled={at === 0} aria-label="Previous version">
              ‹
            </button>
            <span className="small" aria-live="polite">
              {at + 1}/{count}
            </span>
            <button className="icon" onClick={() => setAt(at + 1)} disabled={at === count - 1} aria-label="Next version">
              ›
            </button>
          </span>
        )}
        {message.meta?.stopped && (
          <span
            className="badge stopped"
            title={
              message.meta.interrupted
                ? "The server stopped while writing this answer; this is as far as it got"
                : "Stopped before it finished; this is as far as it went"
            }
          >
            Stopped
          </span>
        )}
        {message.status === "streaming" ? (
          <span className="muted small">Still being written…</span>
        ) : message.sources?.length ? (
          <>
            <button className="link" onClick={() => onShowSources(message.sources ?? null, null)}>
              {message.sources.length} {message.sources.length === 1 ? "source" : "sources"}
            </button>
            {message.meta?.answer_mode === "extractive" && (
              <span className="quoted-answer">
                <span className="badge quoted" title={EXTRACTIVE_REASONS[message.meta.extractive_reason ?? "requested"]}>
                  {answerBadge(message).text}
                </span>
                <span className="muted small"> · {EXTRACTIVE_REASONS[message.meta.extractive_reason ?? "requested"]}</span>
              </span>
            )}
          </>
        ) : (
          !message.meta?.stopped && (
            <span className="general-answer">
              <span className={`badge ${answerBadge(message).kind}`}>{answerBadge(message).text}</span>
              {message.meta?.reason && GENERAL_REASONS[message.meta.reason] && (
                <span className="muted"> · {GENERAL_REASONS[message.meta.reason]}</span>
              )}
            </span>
          )
        )}
        {message.meta?.cached && (
          <span className="muted small" title="The same question had this answer with the same documents, history and model: no model call was made">
            {" "}· reused answer
          </span>
        )}
      </footer>
      {/* An earlier version is read, not rated or copied from here: the latest is the answer. */}
      {!earlier && <AnswerActions message={message} onRegenerate={onRegenerate} />}
    </article>  );
}

export default function Conversation({
  chatId,
  selectedDocumentIds,
  collections,
  header,
  nextMessageScope,
  onChatCreated,
  onPickDocument,
  onSent,
  onAnswered,
  onShowSources,
}: Props) {
  const [messages, setMessages] = useState<Message[]>([]);
  // The unsent text survives a reload or a new login (kept per chat for this browser tab).
  const draftKey = `docchat.draft.${chatId ?? "new"}`;
  const [draft, setDraft] = useState(() => sessionStorage.getItem(draftKey) ?? "");
  // Touch keyboards have no Shift+Enter: phones get the short hint (it also fits their width).
  const narrow = useMediaQuery(NARROW_SCREEN);
  const [pending, setPending] = useState<Pending | null>(null);
  const [failure, setFailure] = useState<Failure | null>(null);
  // The saved question whose answer failed and whose text went back to the composer: sent
  // again, it takes that question's place (sent as a new one, the chat showed it twice and
  // the model read it twice, once as history).
  const [returned, setReturned] = useState<Message | null>(null);
  const draftNow = useRef(draft);
  draftNow.current = draft;
  const [stopping, setStopping] = useState(false);
  // The question being edited in place, and the one being replaced while its answer comes.
  const [editing, setEditing] = useState<string | null>(null);
  const [replacing, setReplacing] = useState<string | null>(null);
  // "@name" being typed at the caret: the documents it names, the highlighted one, and the
  // "@" whose list Escape closed.
  const composer = useRef<HTMLTextAreaElement>(null);
  const [caret, setCaret] = useState(0);
  const [active, setActive] = useState(0);
  const [dismissed, setDismissed] = useState<number | null>(null);
  const mention = mentionAt(draft, caret);
  const mentioning = mention && mention.start !== dismissed ? mention : null;
  const { matches, answered } = useDocumentMatches(mentioning ? mentioning.query : null);
  const listId = useId();
  const abort = useRef<AbortController | null>(null);
  // Files attached to the next message (paper clip or drop), picked for it once uploaded.
  const attachments = useAttachments((document) => onPickDocument({ id: document.id, name: document.filename, status: document.status }));
  const filePicker = useRef<HTMLInputElement>(null);
  const [dropping, setDropping] = useState(false);
  const bottom = useRef<HTMLDivElement>(null);
  const createdHere = useRef<string | null>(null);
  // A collection to ask within, for this chat's next messages (none: the usual scope).
  const [collectionId, setCollectionId] = useState("");
  // False once the user has moved to another chat: a stream still running here (it goes on,
  // so its answer is saved) must not steer the page to its chat or show its sources.
  const onScreen = useRef(true);
  // The server has the question of the answer being read: leaving can stop reading it.
  const reading = useRef(false);
  useEffect(() => {
    onScreen.current = true;
    return () => {
      onScreen.current = false;
      // Leaving stops only the reading: the answer goes on on the server, and is picked up
      // again when the chat is opened. (A question the server does not have yet is still
      // sent: its answer lands in its own chat.)
      if (reading.current) abort.current?.abort();
    };
  }, []);

  useEffect(() => {
    if (chatId && chatId === createdHere.current) return; // already on screen from the stream
    setMessages([]);
    setReturned(null);
    if (!chatId) return;
    let current = true;
    void (async () => {
      const loaded: Message[] = [];
      for (let skip = 0; ; skip += 100) {
        const { data } = await api.GET("/api/v1/chats/{chat_id}/messages", {
          params: { path: { chat_id: chatId }, query: { skip, limit: 100 } },
        });
        if (!data) break;
        loaded.push(...data.items);
        if (loaded.length >= data.total) break;
      }
      if (!current) return;
      // An answer still being written (in another tab, before a reload): shown as it goes.
      const last = loaded[loaded.length - 1];
      const writing = last?.role === "assistant" && last.status === "streaming";
      setMessages(writing ? loaded.slice(0, -1) : loaded);
      if (writing) void resume(last, loaded);
    })();
    return () => {
      current = false;
    };
    // Once per chat opened; `resume` is remade each render.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [chatId]);

  useEffect(() => {
    if (draft) sessionStorage.setItem(draftKey, draft);
    else sessionStorage.removeItem(draftKey);
  }, [draft, draftKey]);

  useEffect(() => {
    bottom.current?.scrollIntoView?.({ block: "end" });
  }, [messages, pending?.text]);

  function send() {
    const question = draft.trim();
    if (!question || pending || attachments.uploading) return;
    setDraft("");
    const tail = unansweredTail(messages);
    // The question put back after a failure (edited or not) is asked in place of the chat's
    // unanswered questions, that one among them.
    void ask(question, returned && tail.some((message) => message.id === returned.id) ? tail[0] : null);
  }

  /** Ask `question`; with `replaces` (regenerate, or an edited question), it and what follows
   * it give way on screen now and on the server once the new answer is saved. */
  async function ask(question: string, replaces: Message | null) {
    if (pending || (!chatId && replaces)) return;
    setEditing(null);
    setReturned(null);
    setReplacing(replaces?.id ?? null);
    // Messages from the replaced question on; read when they are swapped (the list may grow).
    const before = (list: Message[]) => (replaces ? list.slice(0, Math.max(0, list.findIndex((m) => m.id === replaces.id))) : list);
    const body: Schemas["MessageCreate"] = replaces
      ? // The replaced question's documents are asked about again (the server's default).
        { chat_id: chatId, content: question, replaces: replaces.id }
      : { chat_id: chatId, content: question, document_ids: selectedDocumentIds, collection_ids: collectionId ? [collectionId] : [] };
    await write({ user: null, question, text: "", answerId: null }, (handlers, signal) => streamMessage(body, handlers, signal), before);
  }

  /** Follow an answer the server is still writing, from the text listed so far. */
  async function resume(answer: Message, listed: Message[]) {
    const at = listed.findIndex((message) => message.id === answer.id);
    const questionId = at > 0 ? listed[at - 1].id : null;
    await write(
      { user: null, question: "", text: answer.content, answerId: answer.id },
      (handlers, signal) => followAnswer(answer.id, positionAfter(answer.content), handlers, signal),
      (list) => list,
      questionId,
    );
  }

  /** Read an answer until it is done or failed, re-attaching after a dropped connection (the
   * server goes on writing it meanwhile). */
  async function write(initial: Pending, open: Opener, before: (list: Message[]) => Message[], questionId: string | null = null) {
    const controller = new AbortController();
    abort.current = controller;
    reading.current = initial.answerId !== null;
    setFailure(null);
    let state = initial;
    let position = initial.answerId ? positionAfter(initial.text) : "0";
    let ended = false;
    let saved = false; // the server has the question
    let failed: Failure | null = null;
    const asking = initial.question !== "";
    const update = (patch: Partial<Pending>) => {
      state = { ...state, ...patch };
      setPending(state);
    };
    update({});
    const handlers: StreamHandlers = {
      onMeta(newChatId, user, answerId) {
        if (state.answerId) return; // told again on re-attaching
        saved = true;
        reading.current = true;
        update({ user: asking ? user : null, answerId });
        if (!onScreen.current || !asking) return;
        if (!chatId) {
          createdHere.current = newChatId;
          onChatCreated(newChatId);
        }
        onSent();
      },
      onSources() {},
      onDelta(text, at) {
        position = at ?? position;
        update({ text: state.text + text });
      },
      onDone(message) {
        ended = true;
        // Read the user message now: React runs the updater later, after state changes.
        const asked = state.user ? [state.user] : [];
        setMessages((previous) => [...before(previous), ...asked, message]);
        state = { ...state, user: null };
        if (message.sources?.length && onScreen.current) onShowSources(message.sources, null, false);
      },
      onError(detail, status) {
        ended = true;
        // 410: stopped before its first word; the question stays, without an answer.
        if (status !== 410) failed = { questionId: state.user?.id ?? questionId, detail };
      },
    };
    try {
      for (let attempt = 0; ; attempt += 1) {
        try {
          await open(handlers, controller.signal);
        } catch (caught) {
          // Before the server had the question there is nothing to re-attach to.
          if (isAbort(caught) || !state.answerId) throw caught;
        }
        if (ended) break;
        if (!state.answerId) throw new Error("The message failed");
        if (attempt >= RECONNECT_DELAYS_MS.length) throw new Error(LOST_CONNECTION);
        await pause(RECONNECT_DELAYS_MS[attempt], controller.signal);
        const answerId = state.answerId;
        open = (next, signal) => followAnswer(answerId, position, next, signal);
      }
    } catch (caught) {
      if (!isAbort(caught)) failed = { questionId: state.user?.id ?? questionId, detail: caught instanceof Error ? caught.message : "The message failed" };
    } finally {
      if (abort.current === controller) abort.current = null;
      setStopping(false);
      // A failed replacement replaced nothing: the earlier messages stay, on the server too.
      setReplacing(null);
      const unanswered = state.user;
      if (asking && (failed || !saved)) {
        // Refused, failed, or stopped before the question was saved (too long, signed out,
        // server down), or the model could not answer: the text goes back to the composer.
        if (unanswered && !draftNow.current) setReturned(unanswered);
        setDraft((current) => current || initial.question);
        // Written here too: when the session has ended, this view is already gone.
        if (!sessionStorage.getItem(draftKey)) sessionStorage.setItem(draftKey, initial.question);
      }
      // Saved, but no answer came (stopped before its first word, or failed).
      if (unanswered) setMessages((previous) => [...previous, unanswered]);
      setFailure(failed);
      setPending(null);
      onAnswered();
    }
  }

  /** Stop: the server keeps the answer as far as it went (before it has the question, the
   * request is cancelled and the text goes back to the composer). */
  async function stop() {
    if (!pending) return;
    if (!pending.answerId) {
      abort.current?.abort();
      return;
    }
    setStopping(true);
    try {
      await stopAnswer(pending.answerId);
    } catch {
      setStopping(false);
    }
  }

  /** Ask a question that has no answer again (its text leaves the composer if it went back
   * there when it failed). */
  function retry(question: Message) {
    setDraft((current) => (current === question.content ? "" : current));
    void ask(question.content, question);
  }

  function pick(match: Match) {
    if (!mentioning) return;
    const rest = withoutMention(draft, mentioning, caret);
    setDraft(rest.text);
    setCaret(rest.caret);
    setActive(0);
    onPickDocument(match);
    window.setTimeout(() => composer.current?.setSelectionRange(rest.caret, rest.caret), 0);
  }

  function onMentionKey(event: KeyboardEvent<HTMLTextAreaElement>): boolean {
    if (!mentioning) return false;
    if (event.key === "Escape") {
      setDismissed(mentioning.start);
      return true;
    }
    if (!matches.length) return false;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : matches.length - 1;
      setActive((current) => (current + step) % matches.length);
      return true;
    }
    if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey) {
      pick(matches[Math.min(active, matches.length - 1)]);
      return true;
    }
    return false;
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (onMentionKey(event)) {
      event.preventDefault();
      return;
    }
    if (event.key === "Escape" && !event.shiftKey && pending) {
      event.preventDefault();
      void stop();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      send();
    }
  }

  const replacedAt = replacing ? messages.findIndex((message) => message.id === replacing) : -1;
  const shown = replacedAt >= 0 ? messages.slice(0, replacedAt) : messages;
  const lastQuestion = [...shown].reverse().find((message) => message.role === "user") ?? null;

  return (
    <section
      className={`conversation${dropping ? " dropping" : ""}`}
      aria-label="Conversation"
      onDragOver={(event) => {
        if (!event.dataTransfer.types.includes("Files")) return;
        event.preventDefault();
        setDropping(true);
      }}
      onDragLeave={(event) => {
        if (!event.currentTarget.contains(event.relatedTarget as Node | null)) setDropping(false);
      }}
      onDrop={(event) => {
        if (!event.dataTransfer.files.length) return;
        event.preventDefault();
        setDropping(false);
        attachments.attach(event.dataTransfer.files);
      }}
    >
      {dropping && (
        <p className="drop-hint" aria-hidden="true">
          Drop to attach to your next message
        </p>
      )}
      {header}
      <div className="messages" aria-live="polite">
        {!shown.length && !pending && (
          <div className="empty">
            <h2>Ask about your documents</h2>
            <p className="muted">Upload files on the right (or attach them with the paper clip), then ask a question. Answers cite the pages they use.</p>
          </div>
        )}
        {shown.map((message, index) =>
          message.role === "assistant" ? (
            <AnswerMessage
              key={message.id}
              message={message}
              onShowSources={onShowSources}
              onRegenerate={
                index === shown.length - 1 && !pending && lastQuestion ? () => void ask(lastQuestion.content, lastQuestion) : undefined
              }
            />
          ) : (
            <Fragment key={message.id}>
              {editing === message.id ? (
                <QuestionEditor
                  original={message.content}
                  later={shown.length - index - 1}
                  onSend={(text) => void ask(text, message)}
                  onCancel={() => setEditing(null)}
                />
              ) : (
                <article className="message user">
                  <p className="user-text" data-testid="message-user">
                    {message.content}
                  </p>
                  {!pending && (
                    <button className="link small edit-question" onClick={() => setEditing(message.id)} aria-label={`Edit the question: ${message.content.slice(0, 60)}`}>
                      Edit
                    </button>
                  )}
                </article>
              )}
              {shown[index + 1]?.role !== "assistant" &&
                (index + 1 < shown.length || !pending) &&
                (failure?.questionId === message.id ? (
                  <p className="no-answer answer-failed small" role="alert" data-testid="answer-failed">
                    The answer could not be written: {failure.detail.replace(/\.?$/, ".")}
                    {!pending && (
                      <button className="link small" onClick={() => retry(message)}>
                        Try again
                      </button>
                    )}
                  </p>
                ) : (
                  <p className="no-answer muted small" data-testid="no-answer">
                    No answer: stopped or failed before the first word
                    {!pending && (
                      <button className="link small" onClick={() => retry(message)}>
                        Try again
                      </button>
                    )}
                  </p>
                ))}
            </Fragment>
          ),
        )}
        {pending && (
          <>
            {pending.question && (
              // `data-saved`: the server has stored the question (Stop now keeps it).
              <article className="message user" data-testid="message-pending" data-saved={pending.user ? "true" : "false"}>
                <p className="user-text">{pending.question}</p>
              </article>
            )}
            <article className="message assistant streaming" data-testid="message-streaming" aria-busy="true">
              <AnswerText message={{ content: pending.text || "…", sources: null }} onCite={() => undefined} />
            </article>
          </>
        )}
        {failure && !failure.questionId && (
          <p role="alert" className="error" data-testid="message-failed">
            {failure.detail}
          </p>
        )}
        <div ref={bottom} />
      </div>
      <div className="composer">
        {collections.length > 1 && (
          <label className="scope-picker small">
            Ask within
            <select value={collectionId} onChange={(e) => setCollectionId(e.target.value)}>
              <option value="">{chatId ? "this chat's documents (or all you can read)" : "all documents you can read"}</option>
              {collections.map((collection) => (
                <option key={collection.id} value={collection.id}>
                  the collection {collection.name}
                </option>
              ))}
            </select>
          </label>
        )}
        {nextMessageScope}
        <AttachmentList items={attachments.items} onCancel={attachments.cancel} />
        <button className="icon attach" onClick={() => filePicker.current?.click()} title="Attach files to your next message" aria-label="Attach files">
          <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true">
            <path
              d="M16.5 6.5v10a4.5 4.5 0 0 1-9 0V5a3 3 0 0 1 6 0v10.5a1.5 1.5 0 0 1-3 0V6.5"
              fill="none"
              stroke="currentColor"
              strokeWidth="1.8"
              strokeLinecap="round"
            />
          </svg>
        </button>
        <input
          ref={filePicker}
          type="file"
          multiple
          hidden
          data-testid="attach-input"
          onChange={(event) => {
            if (event.target.files) attachments.attach(event.target.files);
            event.target.value = "";
          }}
        />
        <label htmlFor="composer" className="sr-only">
          Message
        </label>
        {mentioning && (
          <MentionList
            id={listId}
            query={mentioning.query}
            answered={answered === mentioning.query}
            matches={matches}
            active={Math.min(active, Math.max(0, matches.length - 1))}
            onPick={pick}
          />
        )}
        <textarea
          id="composer"
          ref={composer}
          rows={2}
          placeholder={narrow ? "Ask a question (@ picks a document)" : "Ask a question (@ picks a document; Enter sends, Shift+Enter adds a line)"}
          value={draft}
          aria-controls={mentioning && matches.length ? listId : undefined}
          aria-activedescendant={mentioning && matches.length ? optionId(listId, Math.min(active, matches.length - 1)) : undefined}
          onChange={(e) => {
            setDraft(e.target.value);
            if (!e.target.value.trim()) setReturned(null); // emptied: what comes next is new
            setCaret(e.target.selectionStart);
            setActive(0);
          }}
          onSelect={(e) => setCaret(e.currentTarget.selectionStart)}
          onKeyDown={onKeyDown}
        />
        {pending ? (
          <button onClick={() => void stop()} className="danger" disabled={stopping}>
            {stopping ? "Stopping…" : "Stop"}
          </button>
        ) : (
          <button
            onClick={send}
            className="primary"
            disabled={!draft.trim() || attachments.uploading}
            title={attachments.uploading ? "Waiting for the attached files to upload" : undefined}
          >
            Send
          </button>
        )}
      </div>
    </section>
  );
}

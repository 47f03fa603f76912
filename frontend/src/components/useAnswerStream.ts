// Stream control for a conversation: reading an answer as it is written, re-attaching after a
// dropped connection (the server goes on writing it meanwhile), and stopping it.
import { useEffect, useRef, useState } from "react";
import { followAnswer, positionAfter, stopAnswer, type Message, type ResearchStep, type StreamHandlers } from "../api/client";
import { useWrite } from "../api/mutations";

/** An answer being written, as far as it has come. */
export interface Pending {
  /** The saved question of a new message (null until the server has it, or when resuming). */
  user: Message | null;
  /** The question shown above it until saved ("" when resuming: it is in the list). */
  question: string;
  text: string;
  answerId: string | null;
  /** The research steps taken so far (research mode with a model that calls tools). */
  steps?: ResearchStep[];
}

/** An answer that could not be written, shown under its question (null: never saved). */
export interface Failure {
  questionId: string | null;
  detail: string;
}

/** Opens the answer's events: a new question's stream, or an answer followed from a position. */
export type Opener = (handlers: StreamHandlers, signal: AbortSignal) => Promise<void>;

/** One answer to read, and what the conversation does as it goes. */
export interface Reading {
  /** What is shown while it comes (`question` "" when resuming an answer already listed). */
  initial: Pending;
  open: Opener;
  /** The question of an answer being resumed (a new question's is known once saved). */
  questionId?: string | null;
  /** The server has the new question, in the chat `chatId` (told only while on screen). */
  onSaved?(chatId: string): void;
  /** The answer is complete: `asked` is its new question (null when resuming). */
  onDone(message: Message, asked: Message | null, onScreen: boolean): void;
  /** The reading is over (done, failed or stopped). `unanswered`: the saved question that got no
   * answer; `giveBack`: a question asked here got none (refused, failed, or stopped before it
   * was saved), so its text goes back to the composer. */
  onEnd(outcome: { unanswered: Message | null; giveBack: boolean }): void;
}

// After a dropped connection, the reader re-attaches after these pauses, then gives up.
export const RECONNECT_DELAYS_MS = [500, 1000, 2000, 4000, 8000];
export const LOST_CONNECTION =
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

/** The answer being read (`pending`), the last one that failed, and `read`/`stop`. */
export function useAnswerStream() {
  const [pending, setPending] = useState<Pending | null>(null);
  const [failure, setFailure] = useState<Failure | null>(null);
  const [stopping, setStopping] = useState(false);
  const abort = useRef<AbortController | null>(null);
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
  // Stopped, the stream ends on its own (the server saves the answer that far); until then the
  // button says "Stopping…". A stop that failed lets the reader try again.
  const stopRequest = useWrite({ write: stopAnswer, onError: () => setStopping(false) });

  /** Read an answer until it is done or failed, re-attaching after a dropped connection. */
  async function read({ initial, open, questionId = null, onSaved, onDone, onEnd }: Reading): Promise<void> {
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
      onMeta(chatId, user, answerId) {
        if (state.answerId) return; // told again on re-attaching
        saved = true;
        reading.current = true;
        update({ user: asking ? user : null, answerId });
        if (onScreen.current && asking) onSaved?.(chatId);
      },
      onSources() {},
      onStep(step) {
        // A re-attached reader is told every step again: each is kept once, by its number.
        const steps = (state.steps ?? []).filter((taken) => taken.number !== step.number);
        update({ steps: [...steps, step].sort((a, b) => a.number - b.number) });
      },
      onDelta(text, at) {
        position = at ?? position;
        update({ text: state.text + text });
      },
      onDone(message) {
        ended = true;
        onDone(message, state.user, onScreen.current);
        state = { ...state, user: null };
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
      onEnd({ unanswered: state.user, giveBack: asking && (failed !== null || !saved) });
      setFailure(failed);
      setPending(null);
    }
  }

  /** Stop: the server keeps the answer as far as it went (before it has the question, the
   * request is cancelled and the text goes back to the composer). */
  function stop() {
    if (!pending) return;
    if (!pending.answerId) {
      abort.current?.abort();
      return;
    }
    setStopping(true);
    stopRequest.mutate(pending.answerId);
  }

  return { pending, failure, stopping, read, stop };
}

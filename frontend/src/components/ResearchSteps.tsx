// The steps a research answer took (search, list, read, finish), as they come and once written:
// what was searched, listed and read, each place it read openable.
import { useState } from "react";
import { openDocument, type Message, type ResearchStep } from "../api/client";

type Place = { documentId: string; page: number | null; label: string };

// At most this many places a step lists (a search may find a dozen passages).
export const PLACES_SHOWN = 5;

const ENDS: Record<string, string> = {
  steps: "its step budget ran out",
  tokens: "its token budget ran out",
};

/** The distinct places a step found or read (a document and page), in order, for links. */
export function stepPlaces(step: ResearchStep): Place[] {
  const places: Place[] = [];
  const seen = new Set<string>();
  for (const passage of step.passages ?? []) {
    const key = `${passage.document_id}:${passage.page ?? ""}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const where = passage.page ? ` p. ${passage.page}` : passage.location ? ` · ${passage.location}` : "";
    places.push({ documentId: passage.document_id, page: passage.page ?? null, label: `${passage.filename}${where}` });
  }
  return places;
}

/** "Researched in 5 steps", and why it stopped when its budget ran out; null without steps. */
export function stepsSummary(meta: Message["meta"]): string | null {
  const steps = meta?.research_steps ?? [];
  if (!steps.length) return null;
  const text = `Researched in ${steps.length} ${steps.length === 1 ? "step" : "steps"}`;
  const end = meta?.research_end ? ENDS[meta.research_end] : undefined;
  return end ? `${text} (${end})` : text;
}

function StepList({ steps }: { steps: ResearchStep[] }) {
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <ol className="research-steps-list">
        {steps.map((step) => {
          const places = stepPlaces(step);
          return (
            <li key={step.number} className={`research-step ${step.action}`} data-testid="research-step">
              <span className="step-said">{step.said}</span>
              {places.length > 0 && (
                <span className="step-places">
                  {places.slice(0, PLACES_SHOWN).map((place) => (
                    <button
                      key={`${place.documentId}:${place.page ?? ""}`}
                      className="link small"
                      title="Open the document here"
                      onClick={() => openDocument(place.documentId, place.page).catch((e: Error) => setError(e.message))}
                    >
                      {place.label}
                    </button>
                  ))}
                  {places.length > PLACES_SHOWN && <span className="muted small">+{places.length - PLACES_SHOWN} more</span>}
                </span>
              )}
            </li>
          );
        })}
      </ol>
      {error && <p role="alert" className="error small">{error}</p>}
    </>
  );
}

/** The steps while the research goes on: each one as it is taken. */
export function LiveResearchSteps({ steps }: { steps: ResearchStep[] }) {
  if (!steps.length) return null;
  return (
    <section className="research-steps live" aria-live="polite" aria-label="Research steps" data-testid="research-steps-live">
      <StepList steps={steps} />
    </section>
  );
}

/** A written research answer's steps, folded under their count. */
export function ResearchSteps({ meta }: { meta: Message["meta"] }) {
  const summary = stepsSummary(meta);
  if (!summary) return null;
  return (
    <details className="research-steps" data-testid="research-steps">
      <summary className="small">{summary}</summary>
      <StepList steps={meta?.research_steps ?? []} />
    </details>
  );
}

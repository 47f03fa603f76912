import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api, type Schemas } from "../api/client";
import { keys } from "../api/queries";
import Pager from "./Pager";

type Entry = Schemas["FeedbackEntry"];
type Rating = Schemas["Rating"];
const PAGE = 20;

/** Rated answers for administrators, newest first: question, answer, sources and comment. */
export default function FeedbackReview() {
  const [skip, setSkip] = useState(0);
  const [rating, setRating] = useState<Rating | "">("down");
  // One cached page per filter and offset: a late reply never replaces the page on screen.
  const { data } = useQuery({
    queryKey: [...keys.admin, "feedback", rating, skip],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      (await api.GET("/api/v1/admin/feedback", { params: { query: { rating: rating || undefined, skip, limit: PAGE } } })).data ?? null,
  });
  const entries: Entry[] = data?.items ?? [];
  const total = data?.total ?? 0;

  return (
    <>
      <label>
        Rating
        <select value={rating} onChange={(e) => { setRating(e.target.value as Rating | ""); setSkip(0); }}>
          <option value="down">rated bad</option>
          <option value="up">rated good</option>
          <option value="">all ratings</option>
        </select>
      </label>
      <ul className="feedback-list">
        {entries.map((entry) => (
          <li key={entry.message_id} className="feedback-entry" data-testid="feedback-entry">
            <p className="muted small">
              <span className={`badge ${entry.rating === "down" ? "rated-down" : "rated-up"}`}>{entry.rating === "down" ? "Bad" : "Good"}</span>{" "}
              {entry.user_email} · {new Date(entry.updated_at).toLocaleString()}
              {entry.model && ` · ${entry.model}`}
            </p>
            <p>
              <strong>Question:</strong> {entry.question ?? "—"}
            </p>
            <p className="feedback-answer">
              <strong>Answer:</strong> {entry.answer}
            </p>
            {entry.sources?.length ? (
              <p className="muted small">
                Sources:{" "}
                {entry.sources
                  .map((source) => `${source.document_name}${source.page ? ` p. ${source.page}` : ""}${source.location ? ` (${source.location})` : ""}`)
                  .join("; ")}
              </p>
            ) : (
              <p className="muted small">General answer, no sources</p>
            )}
            {entry.comment && (
              <blockquote>
                <strong>Comment:</strong> {entry.comment}
              </blockquote>
            )}
          </li>
        ))}
      </ul>
      <Pager skip={skip} limit={PAGE} total={total} onSkip={setSkip} label="Feedback pages" empty="No ratings yet" previous="Newer" next="Older" />
    </>
  );
}

import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { api, type Schemas } from "../api/client";
import { type ApiAnswer, failureText, unwrap, useWrite } from "../api/mutations";
import { keys } from "../api/queries";
import { counted } from "../format";

type Source = Schemas["SourceRead"];
type Kind = Schemas["SourceKindRead"];
type Setting = Schemas["SettingRead"];

const INTERVALS: { minutes: number | null; label: string }[] = [
  { minutes: 15, label: "every 15 minutes" },
  { minutes: 60, label: "every hour" },
  { minutes: 24 * 60, label: "every day" },
  { minutes: null, label: "only when I ask" },
];

/** The kinds of source the server has, each with the settings its form shows. */
function useSourceKinds(): Kind[] {
  return (
    useQuery({
      queryKey: ["source-kinds"],
      queryFn: async () => (await api.GET("/api/v1/sources/kinds")).data ?? [],
      staleTime: Infinity,
    }).data ?? []
  );
}

/** Where a source's files come from, in a line: its kind, then its settings in the kind's order. */
function place(source: Source, kinds: Kind[]): string {
  const kind = kinds.find((each) => each.kind === source.kind);
  const names = kind ? kind.settings.map((setting) => setting.name) : Object.keys(source.settings);
  const values = names.map((name) => source.settings[name]).filter(Boolean);
  return `${kind?.label ?? source.kind}: ${values.join(" · ")}`;
}

function sourcesKey(collectionId: string) {
  return ["collection", collectionId, "sources"] as const;
}

/** "synced 10:42 · 3 added, 1 changed, 2 failed" or the progress of a sync under way. */
function summary(source: Source): string {
  const progress = source.progress as Record<string, number | undefined>;
  const counts = (["added", "changed", "removed", "failed"] as const)
    .filter((name) => (progress[name] ?? 0) > 0)
    .map((name) => `${progress[name]} ${name}`);
  if (source.state === "syncing") {
    const done = progress.done ?? 0;
    const toDo = progress.to_do ?? 0;
    return `syncing${toDo ? ` ${done} of ${toDo}` : "…"}${counts.length ? ` · ${counts.join(", ")}` : ""}`;
  }
  if (source.state === "paused") return "paused";
  const when = source.last_finished_at ? `synced ${new Date(source.last_finished_at).toLocaleString()}` : "not synced yet";
  const unchanged = progress.unchanged ? `${progress.unchanged} unchanged` : "";
  return [when, [...counts, unchanged].filter(Boolean).join(", ")].filter(Boolean).join(" · ");
}

function FailedItems({ source }: { source: Source }) {
  const failed =
    useQuery({
      queryKey: [...sourcesKey(source.collection_id), source.id, "failed"],
      queryFn: async () =>
        (await api.GET("/api/v1/sources/{source_id}/items", { params: { path: { source_id: source.id }, query: { failed: true, limit: 50 } } })).data
          ?.items ?? [],
    }).data ?? [];
  return (
    <ul className="small" aria-label={`Files ${source.name} could not bring in`}>
      {failed.map((item) => (
        <li key={item.key}>
          <code>{item.key}</code> <span className="muted">— {item.error}</span>
        </li>
      ))}
    </ul>
  );
}

/** One setting's field, drawn from its declaration: a credential is a password field. */
function SettingField({ setting, value, onChange }: { setting: Setting; value: string; onChange(value: string): void }) {
  const note = setting.help || (setting.required ? "" : "optional");
  const type = setting.secret ? "password" : setting.type === "number" ? "number" : setting.type === "url" ? "url" : "text";
  return (
    <label className={setting.type === "number" ? undefined : "grow"}>
      <span>
        {setting.label} {note && <span className="muted small">({note})</span>}
      </span>
      <input
        type={type}
        required={setting.required}
        min={setting.type === "number" ? 1 : undefined}
        placeholder={setting.placeholder || undefined}
        autoComplete={setting.secret ? "new-password" : "off"}
        value={value}
        onChange={(event) => onChange(event.target.value)}
      />
    </label>
  );
}

function AddSource({ collectionId, isAdmin, onAdded }: { collectionId: string; isAdmin: boolean; onAdded(): void }) {
  const kinds = useSourceKinds().filter((each) => isAdmin || !each.administrators_only);
  const [chosen, setKind] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [minutes, setMinutes] = useState<number | null>(60);
  const kind = kinds.find((each) => each.kind === chosen) ?? kinds[0];
  const declared = kind?.settings ?? [];
  const create = useWrite({
    write: (body: Schemas["SourceCreate"]) =>
      unwrap(api.POST("/api/v1/collections/{collection_id}/sources", { params: { path: { collection_id: collectionId } }, body }), "The source could not be added"),
    invalidates: [sourcesKey(collectionId), keys.collections],
    onSuccess() {
      setName("");
      setFields({});
      onAdded();
    },
  });
  const error = create.error ? failureText(create.error) : null;

  function add(event: FormEvent) {
    event.preventDefault();
    if (!kind) return;
    const given = (secret: boolean) =>
      declared.filter((setting) => setting.secret === secret && fields[setting.name]?.trim()).map((setting) => [setting.name, secret ? fields[setting.name] : fields[setting.name].trim()]);
    const settings = Object.fromEntries(given(false));
    const secrets = given(true).length ? Object.fromEntries(given(true)) : null;
    create.mutate({ name, kind: kind.kind, settings, secrets, interval_minutes: minutes });
  }

  const fieldsOf = (secret: boolean) =>
    declared
      .filter((setting) => setting.secret === secret)
      .map((setting) => (
        <SettingField key={setting.name} setting={setting} value={fields[setting.name] ?? ""} onChange={(value) => setFields({ ...fields, [setting.name]: value })} />
      ));
  return (
    <form className="stack" onSubmit={add} aria-label="Add a source">
      <div className="row wrap">
        <label>
          Kind
          <select value={kind?.kind ?? ""} onChange={(e) => setKind(e.target.value)}>
            {kinds.map((each) => (
              <option key={each.kind} value={each.kind}>
                {each.label}
              </option>
            ))}
          </select>
        </label>
        <label className="grow">
          Name
          <input required maxLength={200} placeholder="Team wiki" value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Sync
          <select value={minutes ?? ""} onChange={(e) => setMinutes(e.target.value ? Number(e.target.value) : null)}>
            {INTERVALS.map((option) => (
              <option key={option.label} value={option.minutes ?? ""}>
                {option.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div className="row wrap fields">{fieldsOf(false)}</div>
      {declared.some((setting) => setting.secret) && <div className="row wrap fields">{fieldsOf(true)}</div>}
      {error && (
        <p role="alert" className="error small">
          {error}
        </p>
      )}
      <div>
        <button type="submit" className="primary" disabled={!kind}>
          Add source
        </button>
      </div>
    </form>
  );
}

/** A collection's sources: where its files come from, each sync's counts and failures, and
 * (for its owners) adding, syncing, pausing and removing them. */
export default function CollectionSources({ collectionId, isOwner, isAdmin, onChanged }: { collectionId: string; isOwner: boolean; isAdmin: boolean; onChanged(): void }) {
  const [adding, setAdding] = useState(false);
  const [showFailed, setShowFailed] = useState<string | null>(null);
  const key = sourcesKey(collectionId);
  const kinds = useSourceKinds();
  const sources =
    useQuery({
      queryKey: key,
      queryFn: async () => (await api.GET("/api/v1/collections/{collection_id}/sources", { params: { path: { collection_id: collectionId } } })).data ?? [],
      // Only while a sync is due or under way: its progress, then the new documents.
      refetchInterval: (query) =>
        (query.state.data ?? []).some((source) => source.state === "syncing" || (source.next_sync_at && new Date(source.next_sync_at) <= new Date()))
          ? 2000
          : false,
    }).data ?? [];
  // A sync that moved on brought documents in or took them out: show the collection's anew.
  const moved = sources
    .map((source) => `${source.id}:${source.state}:${source.last_finished_at ?? ""}:${String(source.progress.done ?? "")}`)
    .join();
  const seen = useRef(moved);
  useEffect(() => {
    if (seen.current !== moved) onChanged();
    seen.current = moved;
  }, [moved, onChanged]);

  // The sources and the collection (its documents) are read again, whether or not it went through.
  const change = useWrite({
    write: ({ send, failure }: { send(): Promise<ApiAnswer>; failure: string }) => unwrap(send(), failure),
    invalidates: [key, keys.collections],
    invalidateOnError: true,
  });
  const error = change.error ? failureText(change.error) : null;
  const run = (send: () => Promise<ApiAnswer>, failure: string) => change.mutate({ send, failure });

  function remove(source: Source) {
    if (!window.confirm(`Remove the source “${source.name}”?`)) return;
    const keep = window.confirm(`Keep the documents “${source.name}” brought in? OK keeps them in the collection; Cancel deletes them too.`);
    run(
      () => api.DELETE("/api/v1/sources/{source_id}", { params: { path: { source_id: source.id }, query: { keep_documents: keep } } }),
      "The source could not be removed",
    );
  }

  if (!isOwner && sources.length === 0) return null;
  return (
    <>
      <h3>Sources ({sources.length})</h3>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <ul className="plain" aria-label="Sources">
        {sources.map((source) => {
          const path = { source_id: source.id };
          const failed = Number((source.progress as Record<string, number>).failed ?? 0);
          return (
            <li key={source.id} className="sync-source">
              <div className="row wrap">
                <span className="grow">
                  <strong>{source.name}</strong>{" "}
                  <span className="muted small">{place(source, kinds)}</span>
                </span>
                <span className={`badge ${source.state}`}>{source.state}</span>
              </div>
              <p className="small muted" aria-live="polite">
                {summary(source)}
                {source.state !== "paused" && source.next_sync_at && ` · next ${new Date(source.next_sync_at).toLocaleString()}`}
              </p>
              {source.last_error && <p className="small error">{source.last_error}</p>}
              {failed > 0 && (
                <button type="button" className="link small" onClick={() => setShowFailed(showFailed === source.id ? null : source.id)}>
                  {showFailed === source.id ? "Hide" : "Show"} {counted(failed, "file")} not brought in
                </button>
              )}
              {showFailed === source.id && <FailedItems source={source} />}
              {isOwner && (
                <div className="row wrap">
                  <button type="button" disabled={source.state === "syncing" || source.state === "paused"} onClick={() => run(() => api.POST("/api/v1/sources/{source_id}/sync", { params: { path } }), "Could not start a sync")}>
                    Sync now
                  </button>
                  <button
                    type="button"
                    onClick={() => run(() => api.PATCH("/api/v1/sources/{source_id}", { params: { path }, body: { paused: source.state !== "paused" } }), "Could not change it")}
                  >
                    {source.state === "paused" ? "Resume" : "Pause"}
                  </button>
                  <button type="button" className="danger-text" onClick={() => remove(source)} aria-label={`Remove the source ${source.name}`}>
                    Remove
                  </button>
                </div>
              )}
            </li>
          );
        })}
        {sources.length === 0 && <li className="muted">No sources: files are added one by one.</li>}
      </ul>
      {isOwner &&
        (adding ? (
          <AddSource
            collectionId={collectionId}
            isAdmin={isAdmin}
            onAdded={() => setAdding(false)}
          />
        ) : (
          <button type="button" onClick={() => setAdding(true)}>
            Add a source…
          </button>
        ))}
    </>
  );
}

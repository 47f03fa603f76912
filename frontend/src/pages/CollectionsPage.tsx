import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { api, errorMessage, type DocumentInfo, type Schemas } from "../api/client";
import { type ApiAnswer, failureText, latestFailure, unwrap, useWrite } from "../api/mutations";
import { keys, refreshCollections, useCollections, useInvitations } from "../api/queries";
import CollectionSources from "../components/CollectionSources";

type Collection = Schemas["CollectionRead"];
type Member = Schemas["MemberRead"];
type Role = Schemas["CollectionRole"];
type Invitation = Schemas["InvitationRead"];
const ROLES: Role[] = ["viewer", "editor", "owner"];

/** The reader's documents not yet in the collection, to tick and add together. */
function AddDocuments({ documents, onAdd }: { documents: DocumentInfo[]; onAdd(ids: string[]): void }) {
  const [picked, setPicked] = useState<string[]>([]);
  const toggle = (id: string) => setPicked((current) => (current.includes(id) ? current.filter((other) => other !== id) : [...current, id]));
  return (
    <form
      className="add-documents"
      onSubmit={(event) => {
        event.preventDefault();
        if (picked.length) onAdd(picked);
        setPicked([]);
      }}
    >
      <fieldset>
        <legend>Add your documents</legend>
        <ul className="plain pick-list">
          {documents.map((document) => (
            <li key={document.id}>
              <label>
                <input type="checkbox" checked={picked.includes(document.id)} onChange={() => toggle(document.id)} /> {document.filename}
              </label>
            </li>
          ))}
        </ul>
        <div className="row">
          <button type="submit" className="primary" disabled={!picked.length}>
            {picked.length > 1 ? `Add ${picked.length} documents` : "Add"}
          </button>
          {documents.length > 1 && (
            <button type="button" onClick={() => setPicked(picked.length === documents.length ? [] : documents.map((document) => document.id))}>
              {picked.length === documents.length ? "Select none" : "Select all"}
            </button>
          )}
        </div>
      </fieldset>
    </form>
  );
}

/** A change to a collection: the request, and what to say when it is refused without a reason. */
interface Change {
  send(): Promise<ApiAnswer>;
  failure: string;
}

function CollectionDetail({ collection, userId, isAdmin }: { collection: Collection; userId: string; isAdmin: boolean }) {
  const [who, setWho] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const path = { collection_id: collection.id };
  const canEdit = collection.role !== "viewer";
  const isOwner = collection.role === "owner" && !collection.builtin;

  const detail = useQuery({
    queryKey: keys.collection(collection.id),
    queryFn: async () => {
      const [docs, people] = await Promise.all([
        api.GET("/api/v1/collections/{collection_id}/documents", { params: { path, query: { limit: 100 } } }),
        collection.builtin ? Promise.resolve({ data: [] as Member[] }) : api.GET("/api/v1/collections/{collection_id}/members", { params: { path } }),
      ]);
      return { documents: docs.data?.items ?? [], members: people.data ?? [] };
    },
  });
  const documents = detail.data?.documents ?? [];
  const members = detail.data?.members ?? [];
  // The reader's own documents, those they can add (the first page of their list).
  const mine =
    useQuery({
      queryKey: [...keys.documents, "own"],
      queryFn: async () => (await api.GET("/api/v1/documents", { params: { query: { limit: 100 } } })).data?.items ?? [],
      select: (listed: DocumentInfo[]) => listed.filter((document) => document.owner_id === userId),
    }).data ?? [];
  const groups =
    useQuery({
      queryKey: keys.groups,
      queryFn: async () => (await api.GET("/api/v1/groups", { params: { query: { limit: 100 } } })).data?.items ?? [],
    }).data ?? [];
  // The collections (their counts), this one's documents and members: read again, refused or not.
  const changes = { invalidates: [keys.collections], invalidateOnError: true };
  const change = useWrite({ write: ({ send, failure }: Change) => unwrap(send(), failure), ...changes });
  const run = (send: Change["send"], failure: string) => change.mutate({ send, failure });
  /** Several documents at once: one request each, all sent together; what failed is said. */
  const addDocuments = useWrite({
    async write(ids: string[]) {
      const results = await Promise.all(
        ids.map((document_id) => api.PUT("/api/v1/collections/{collection_id}/documents/{document_id}", { params: { path: { ...path, document_id } } })),
      );
      const failed = results.filter((result) => result.error);
      if (failed.length) throw new Error(`${failed.length} of ${ids.length} could not be added: ${errorMessage(failed[0].error, "refused")}`);
    },
    ...changes,
  });
  const error = latestFailure(change, addDocuments);

  function addMember(event: FormEvent) {
    event.preventDefault();
    const group = groups.find((candidate) => candidate.name === who.trim());
    const body = group ? { group_id: group.id, role } : { email: who.trim(), role };
    run(() => api.POST("/api/v1/collections/{collection_id}/members", { params: { path }, body }), "Could not share");
    setWho("");
  }

  const inside = new Set(documents.map((document) => document.id));
  const addable = mine.filter((document) => !inside.has(document.id));
  return (
    <section className="card wide" aria-labelledby="collection-title">
      <h2 id="collection-title">{collection.name}</h2>
      <p className="muted">
        {collection.description || (collection.builtin ? "Shared with every user." : "")} Your role: <strong>{collection.role}</strong>.
      </p>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <h3>Documents ({documents.length})</h3>
      <ul className="plain" aria-label="Documents in the collection">
        {documents.map((document) => (
          <li key={document.id} className="row">
            <span className="grow">{document.filename}</span>
            {canEdit && (
              <button
                type="button"
                onClick={() => run(() => api.DELETE("/api/v1/collections/{collection_id}/documents/{document_id}", { params: { path: { ...path, document_id: document.id } } }), "Could not remove")}
                aria-label={`Remove ${document.filename} from ${collection.name}`}
              >
                Remove
              </button>
            )}
          </li>
        ))}
        {documents.length === 0 && <li className="muted">No documents yet.</li>}
      </ul>
      {canEdit && addable.length > 0 && (
        <AddDocuments
          key={addable.map((document) => document.id).join()}
          documents={addable}
          onAdd={(ids) => addDocuments.mutate(ids)}
        />
      )}
      {!collection.builtin && (
        <>
          <CollectionSources
            collectionId={collection.id}
            isOwner={isOwner}
            isAdmin={isAdmin}
            onChanged={refreshCollections}
          />
          <h3>Members ({members.length})</h3>
          <ul className="plain" aria-label="Members">
            {members.map((member) => (
              <li key={member.id} className="row wrap">
                <span className="grow">
                  {member.email ?? `group ${member.group_name}`}
                  {member.pending && <span className="muted"> · invited, not yet accepted</span>}
                </span>
                {isOwner ? (
                  <select
                    aria-label={`Role of ${member.email ?? member.group_name}`}
                    value={member.role}
                    onChange={(e) =>
                      run(() => api.PATCH("/api/v1/collections/{collection_id}/members/{member_id}", { params: { path: { ...path, member_id: member.id } }, body: { role: e.target.value as Role } }), "Could not change the role")
                    }
                  >
                    {ROLES.map((name) => (
                      <option key={name}>{name}</option>
                    ))}
                  </select>
                ) : (
                  <span className="muted">{member.role}</span>
                )}
                {(isOwner || member.user_id === userId) && (
                  <button
                    type="button"
                    onClick={() => run(() => api.DELETE("/api/v1/collections/{collection_id}/members/{member_id}", { params: { path: { ...path, member_id: member.id } } }), "Could not remove")}
                  >
                    {member.user_id === userId ? "Leave" : "Remove"}
                  </button>
                )}
              </li>
            ))}
          </ul>
          {isOwner && (
            <form onSubmit={addMember} className="row wrap" aria-label="Share the collection">
              <label className="grow">
                <span className="sr-only">Email or group to share with</span>
                <input list="known-groups" required placeholder="colleague@example.com or a group" value={who} onChange={(e) => setWho(e.target.value)} />
                <datalist id="known-groups">
                  {groups.map((group) => (
                    <option key={group.id} value={group.name} />
                  ))}
                </datalist>
              </label>
              <label>
                <span className="sr-only">Role</span>
                <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
                  {ROLES.map((name) => (
                    <option key={name}>{name}</option>
                  ))}
                </select>
              </label>
              <button type="submit" className="primary">
                Share
              </button>
            </form>
          )}
          {isOwner && (
            <button
              type="button"
              className="danger"
              onClick={() => window.confirm(`Delete the collection “${collection.name}”? Its documents stay with their owners.`) && run(() => api.DELETE("/api/v1/collections/{collection_id}", { params: { path } }), "Could not delete")}
            >
              Delete collection
            </button>
          )}
        </>
      )}
    </section>
  );
}

/** Collections others added you to: nothing of them reaches your answers until you accept. */
function Invitations({ invitations, onAnswered }: { invitations: Invitation[]; onAnswered: (joined: string | null) => void }) {
  const reply = useWrite({
    write: ({ invitation, accept }: { invitation: Invitation; accept: boolean }) => {
      const path = { params: { path: { collection_id: invitation.collection_id } } };
      return unwrap(
        accept
          ? api.POST("/api/v1/collections/{collection_id}/invitation/accept", path)
          : api.DELETE("/api/v1/collections/{collection_id}/invitation", path),
        "Could not answer the invitation",
      );
    },
    // Accepted, its documents are the reader's to read now: lists shown elsewhere are out of date.
    invalidates: [keys.collections, keys.documents, keys.usage],
    onSuccess: (_, { invitation, accept }) => onAnswered(accept ? invitation.collection_id : null),
  });
  if (invitations.length === 0) return null;
  const error = reply.error ? failureText(reply.error) : null;

  return (
    <section className="card" aria-labelledby="invitations-title">
      <h2 id="invitations-title">Invitations</h2>
      <p className="muted">Their documents reach your answers only once you accept.</p>
      <ul className="plain" aria-label="Invitations">
        {invitations.map((invitation) => (
          <li key={invitation.collection_id} className="row wrap">
            <span className="grow">
              <strong>{invitation.collection_name}</strong>{" "}
              <span className="muted">
                as {invitation.role}
                {invitation.invited_by ? `, from ${invitation.invited_by}` : ""}
              </span>
            </span>
            <button type="button" className="primary" onClick={() => reply.mutate({ invitation, accept: true })} aria-label={`Accept ${invitation.collection_name}`}>
              Accept
            </button>
            <button type="button" onClick={() => reply.mutate({ invitation, accept: false })} aria-label={`Decline ${invitation.collection_name}`}>
              Decline
            </button>
          </li>
        ))}
      </ul>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </section>
  );
}

/** Collections: shared sets of documents (a team's knowledge base), with members and roles. */
export default function CollectionsPage({ userId, isAdmin }: { userId: string; isAdmin: boolean }) {
  const collections = useCollections();
  const invitations = useInvitations();
  const [openId, setOpenId] = useState<string | null>(null);
  const [name, setName] = useState("");
  // Collections, their details and the invitations are read again.
  const add = useWrite({
    write: () => unwrap(api.POST("/api/v1/collections", { body: { name, description: "" } }), "Could not create the collection"),
    invalidates: [keys.collections],
    onSuccess(created) {
      setName("");
      setOpenId(created.id);
    },
  });
  const error = add.error ? failureText(add.error) : null;

  function create(event: FormEvent) {
    event.preventDefault();
    add.mutate();
  }

  const open = collections.find((collection) => collection.id === openId) ?? null;
  return (
    <main className="admin">
      <Invitations
        invitations={invitations}
        onAnswered={(joined) => joined && setOpenId(joined)}
      />
      <section className="card" aria-labelledby="collections-title">
        <h2 id="collections-title">Collections</h2>
        <p className="muted">Share sets of documents with colleagues and groups. Ask within one from the chat.</p>
        <ul className="plain" aria-label="Your collections">
          {collections.map((collection) => (
            <li key={collection.id}>
              <button type="button" className={`link ${collection.id === openId ? "current" : ""}`} onClick={() => setOpenId(collection.id)}>
                {collection.name}
              </button>{" "}
              <span className="muted">
                {collection.document_count} {collection.document_count === 1 ? "document" : "documents"} · {collection.role}
              </span>
            </li>
          ))}
        </ul>
        <form onSubmit={create} className="row wrap" aria-label="New collection">
          <label className="grow">
            <span className="sr-only">Name of the new collection</span>
            <input required maxLength={200} placeholder="New collection name" value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <button type="submit" className="primary">
            Create
          </button>
        </form>
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
      </section>
      {open && <CollectionDetail key={open.id} collection={open} userId={userId} isAdmin={isAdmin} />}
    </main>
  );
}

/** @module cli/help – the admin CLI's usage text (`model-gateway-admin help`). */
export const USAGE = `Usage: model-gateway-admin [ledger options] <command> [arguments]

Ledger options (any position):
  --sqlite <path>        SQLite ledger file (default $GATEWAY_LEDGER_PATH or ./data/gateway.db)
  --ledger-url <url>     PostgreSQL ledger, postgres://... (default $GATEWAY_LEDGER_URL; wins over
                         the SQLite default, not over an explicit --sqlite)
  --schema <name>        PostgreSQL schema (default $GATEWAY_LEDGER_SCHEMA or public)
The ledger is migrated before every command.

Or drive a running gateway's admin API instead of the ledger (every command but migrate):
  --url <admin url>      e.g. http://127.0.0.1:8081 (the gateway's admin.host:admin.port)
  --admin-key <key>      an admin key from the config's admin.keys (default $GATEWAY_ADMIN_KEY;
                         the older $GW_ADMIN_KEY is still read when that is not set)

Commands:
  migrate                                       apply pending schema migrations
  org create <id> [--name N]                    create an organization (balance 0)
  org list [--json]                             id, name, balance, created
  project create <id> --org <org> [--name N]    create a project in an organization
  project list [--org O] [--json]               id, organization, name, created
  balance topup <org> <amount> [--reason R]     add a positive amount (currency units, at most
                                                6 decimals, e.g. 12.50); prints the new balance
  balance adjust <org> <amount> --reason R      correct a balance by a signed amount (e.g. -2.50)
  balance refund <org> <amount> --reason R [--trace T]
                                                give money back, maybe for one call (its trace id;
                                                never more of it than it was charged)
  balance history <org> [--limit N] [--json]    the balance's journal, newest first (default 100):
                                                kind, amount, balance after, actor, reason
  balance show <org> [--json]                   balance, reserved (held by calls in flight), available
  verify [--json]                               check every balance = journal − charges; lists the
                                                organizations that differ and exits 1
  audit list [--actor A] [--action X] [--target T] [--from ISO] [--to ISO] [--limit N] [--json]
                                                admin writes, newest first (default 100): actor,
                                                action, target, result; --json adds before/after
  key create --org <org> [--project P] [--name N] [--models a,b] [--id ID] [settings]
                                                create an API key; the secret is printed ONCE,
                                                only its sha256 is stored
  key update <id> [settings]                    change a key's settings (none clears one)
  key rotate <id> [--grace SECONDS]             a new secret, printed ONCE; the old one works
                                                for SECONDS more (default 3600; 0: stops now)
  key revoke <id>                               revoke a key (the gateway drops it within its
                                                auth ledgerCacheMs)
  key list [--json]                             id, prefix, name, org, project, created, revoked,
                                                expires, budget (spent/amount per window),
                                                spent, rpm, tpm, last used, tags
    settings: --models a,b (ids, or patterns: openai/*, *) --expires ISO --tags a,b
              --budget AMOUNT [--window day|month|SECONDS] (default month)
              --lifetime-budget AMOUNT --rpm N --tpm N --name N
  price set <model> --input <p> --output <p> [--cached <p>] [--cache-write <p>]
            [--cache-write-1h <p>]              ledger price of a model (overrides the config's),
                                                in currency units per million tokens (--cached:
                                                cached input tokens, --cache-write: input tokens
                                                written to the cache; default: the input rate;
                                                --cache-write-1h: those written to a one-hour
                                                cache; default: the cache-write rate)
  price show <model> [--json]                   the ledger price of a model
  holds list [--org O] [--key K] [--kind organization|key] [--json]
                                                PostgreSQL: holds of calls in flight (id,
                                                organization, amount, live or expired, expiry,
                                                replica, trace id, kind, key): kind organization
                                                holds the balance, kind key a ledger key's budget
                                                (a call on a key with a budget holds both; --org
                                                lists both kinds, --key that key's budget holds);
                                                expired ones no longer count
  holds release <id>                            PostgreSQL: drop one hold of either kind (a call
                                                that will never settle, or a key stuck at its
                                                budget); it would expire by itself anyway
  spool show [--spool P] [--json]               the charge spool (charges the ledger would not take,
                                                kept until they commit): count, total, oldest;
                                                --spool default $GATEWAY_SPOOL_PATH or
                                                ./data/charge-spool.jsonl (no ledger needed)
  spool replay [--spool P] [--json]             writes the spooled charges to the ledger (each
                                                once: one usage record per trace id) and keeps
                                                what still fails; refused while a running gateway
                                                owns the spool (it replays it itself)
  usage export [--from ISO] [--to ISO] [--format csv|json]
                                                usage records with from <= time < to, to stdout;
                                                time as ISO 8601, cost in currency units,
                                                prices per million tokens
  usage summary [--from ISO] [--to ISO] [--group-by model|organization|tag]
                [--org O] [--project P] [--key K] [--model M] [--json]
                                                requests, input, cached and output tokens and
                                                cost with from <= time < to (default: the 30
                                                days before --to, default now; at most 1500
                                                days), per model or organization when grouped
  help                                          this text

Exit codes: 0 ok, 1 ledger error (e.g. unknown organization; verify: a balance differs), 2 bad
command or argument. Writes on the ledger are in the audit log as cli:<OS user>.

Examples:
  model-gateway-admin org create acme --name "Acme Inc"
  model-gateway-admin balance topup acme 12.50
  model-gateway-admin balance adjust acme -2.50 --reason "double top-up on 3 May"
  model-gateway-admin key create --org acme --project web --name ci --models echo/echo-1
  model-gateway-admin key update key_3f9a --models 'openai/*' --budget 5 --window day --rpm 60 --tags team:web
  model-gateway-admin key rotate key_3f9a --grace 600
  model-gateway-admin price set echo/echo-1 --input 3 --output 15 --cached 0.3
  model-gateway-admin usage summary --from 2025-01-01 --group-by model
  model-gateway-admin --ledger-url postgres://gw@db/gw usage export --from 2025-01-01 --to 2025-02-01 --format csv
  GATEWAY_ADMIN_KEY=... model-gateway-admin --url http://127.0.0.1:8081 balance topup acme 12.50
`

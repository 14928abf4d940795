#!/usr/bin/env bash
# Throwaway S3-speaking servers for tests: moto in server mode on free loopback ports.
#
# The main one has request authentication on. moto checks no signature unless
# INITIAL_NO_AUTH_ACTION_COUNT is set; then the first N requests are free and every later one must be
# signed (SigV4) by a key moto knows, and IAM policies are enforced. The free requests create an IAM
# user with a policy allowing S3, its access key, the test bucket, a private bucket of originals, and a
# second user who may use the test bucket only (so the originals' bucket refuses it).
#
# The second one has authentication off: moto with authentication answers presigned GETs with HTTP 500,
# so presigned URLs are tested here. It accepts any signature, a wrong or an expired one included.
#
#   scripts/s3-temp.sh start DIR  -> prints KEY=VALUE lines (also in DIR/env): THUMBD_TEST_S3_ENDPOINT,
#                                    THUMBD_TEST_S3_BUCKET, THUMBD_TEST_S3_ACCESS_KEY, THUMBD_TEST_S3_SECRET_KEY,
#                                    temporary credentials: THUMBD_TEST_S3_SESSION_ACCESS_KEY,
#                                    _SESSION_SECRET_KEY, _SESSION_TOKEN; the originals' bucket:
#                                    THUMBD_TEST_S3_SOURCE_BUCKET, and the limited user's
#                                    THUMBD_TEST_S3_LIMITED_ACCESS_KEY, _LIMITED_SECRET_KEY; and the
#                                    server without authentication: THUMBD_TEST_S3_OPEN_ENDPOINT
#   scripts/s3-temp.sh stop DIR   -> stops them and deletes DIR
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

# moto and boto3 live in the virtualenv scripts/install-deps.sh makes.
venv=${THUMBD_TEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/thumbd/test-venv}
python=$venv/bin/python
[ -x "$python" ] || python=python3

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# moto on PORT, its log in DIR/NAME.log and pid in DIR/NAME.pid; waits until it answers.
start_moto() {
  local name=$1 port=$2
  nohup "$python" -m moto.server -H 127.0.0.1 -p "$port" >"$dir/$name.log" 2>&1 &
  echo $! >"$dir/$name.pid"
  for _ in $(seq 1 300); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/"; then return 0; fi
    sleep 0.1
  done
  echo "s3-temp: moto did not start; its log follows" >&2
  cat "$dir/$name.log" >&2
  exit 1
}

start() {
  mkdir -p "$dir"
  local port open_port
  port=$(free_port)
  open_port=$(free_port)
  # Ten free requests: the user, its policy, its access key, the two buckets, the limited user, its
  # policy and its key, a role and its policy.
  INITIAL_NO_AUTH_ACTION_COUNT=10 start_moto moto "$port"
  start_moto moto-open "$open_port"
  "$python" - "$port" "$dir/env" "$open_port" <<'PY'
import sys
import boto3

port, out, open_port = sys.argv[1], sys.argv[2], sys.argv[3]
endpoint = f"http://127.0.0.1:{port}"
anon = dict(region_name="us-east-1", aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
iam = boto3.client("iam", endpoint_url=endpoint, **anon)
iam.create_user(UserName="thumbd-test")
iam.put_user_policy(
    UserName="thumbd-test", PolicyName="s3",
    PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*","sts:AssumeRole"],"Resource":"*"}]}')
key = iam.create_access_key(UserName="thumbd-test")["AccessKey"]
s3 = boto3.client("s3", endpoint_url=endpoint, **anon)
s3.create_bucket(Bucket="thumbd-test")
s3.create_bucket(Bucket="thumbd-originals")
iam.create_user(UserName="thumbd-limited")
iam.put_user_policy(
    UserName="thumbd-limited", PolicyName="s3",
    PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*",'
    '"Resource":["arn:aws:s3:::thumbd-test","arn:aws:s3:::thumbd-test/*"]}]}')
limited = iam.create_access_key(UserName="thumbd-limited")["AccessKey"]
# Temporary credentials with a session token: a role the user assumes (moto checks the token of an
# assumed role's keys). Signed by the user's key: the free requests are used up by now.
iam.create_role(
    RoleName="thumbd-test-role",
    AssumeRolePolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
    '"Principal":{"AWS":"arn:aws:iam::123456789012:user/thumbd-test"},"Action":"sts:AssumeRole"}]}')
iam.put_role_policy(
    RoleName="thumbd-test-role", PolicyName="s3",
    PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}')
sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
session = sts.assume_role(
    RoleArn="arn:aws:iam::123456789012:role/thumbd-test-role", RoleSessionName="thumbd-test",
    DurationSeconds=43200)["Credentials"]
with open(out, "w") as f:
    f.write(f"THUMBD_TEST_S3_ENDPOINT={endpoint}\n")
    f.write("THUMBD_TEST_S3_BUCKET=thumbd-test\n")
    f.write(f"THUMBD_TEST_S3_ACCESS_KEY={key['AccessKeyId']}\n")
    f.write(f"THUMBD_TEST_S3_SECRET_KEY={key['SecretAccessKey']}\n")
    f.write(f"THUMBD_TEST_S3_SESSION_ACCESS_KEY={session['AccessKeyId']}\n")
    f.write(f"THUMBD_TEST_S3_SESSION_SECRET_KEY={session['SecretAccessKey']}\n")
    f.write(f"THUMBD_TEST_S3_SESSION_TOKEN={session['SessionToken']}\n")
    f.write("THUMBD_TEST_S3_SOURCE_BUCKET=thumbd-originals\n")
    f.write(f"THUMBD_TEST_S3_LIMITED_ACCESS_KEY={limited['AccessKeyId']}\n")
    f.write(f"THUMBD_TEST_S3_LIMITED_SECRET_KEY={limited['SecretAccessKey']}\n")
    f.write(f"THUMBD_TEST_S3_OPEN_ENDPOINT=http://127.0.0.1:{open_port}\n")
PY
  cat "$dir/env"
}

stop() {
  [ -e "$dir" ] || return 0
  for pidfile in "$dir"/*.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  rm -rf "$dir"
}

case $cmd in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac

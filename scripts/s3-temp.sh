#!/usr/bin/env bash
# A throwaway S3-speaking server for tests: moto in server mode on a free loopback port, with request
# authentication on. moto checks no signature unless INITIAL_NO_AUTH_ACTION_COUNT is set; then the first
# N requests are free and every later one must be signed (SigV4) by a key moto knows. The free requests
# create an IAM user, its access key, a policy allowing S3, and the test bucket.
#
#   scripts/s3-temp.sh start DIR  -> prints KEY=VALUE lines (also in DIR/env): THUMBD_TEST_S3_ENDPOINT,
#                                    THUMBD_TEST_S3_BUCKET, THUMBD_TEST_S3_ACCESS_KEY, THUMBD_TEST_S3_SECRET_KEY,
#                                    and temporary credentials: THUMBD_TEST_S3_SESSION_ACCESS_KEY,
#                                    _SESSION_SECRET_KEY, _SESSION_TOKEN
#   scripts/s3-temp.sh stop DIR   -> stops it and deletes DIR
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

# moto and boto3 live in the virtualenv scripts/install-deps.sh makes.
venv=${THUMBD_TEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/thumbd/test-venv}
python=$venv/bin/python
[ -x "$python" ] || python=python3

start() {
  mkdir -p "$dir"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # Six free requests: create the user, its policy, its access key, the bucket, a role and its policy.
  INITIAL_NO_AUTH_ACTION_COUNT=6 nohup "$python" -m moto.server -H 127.0.0.1 -p "$port" \
    >"$dir/moto.log" 2>&1 &
  echo $! >"$dir/pid"
  local up=""
  for _ in $(seq 1 300); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/"; then up=1; break; fi
    sleep 0.1
  done
  [ -n "$up" ] || { echo "s3-temp: moto did not start; its log follows" >&2; cat "$dir/moto.log" >&2; exit 1; }
  "$python" - "$port" "$dir/env" <<'PY'
import sys
import boto3

port, out = sys.argv[1], sys.argv[2]
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
PY
  cat "$dir/env"
}

stop() {
  [ -e "$dir" ] || return 0
  if [ -f "$dir/pid" ]; then kill "$(cat "$dir/pid")" 2>/dev/null || true; fi
  rm -rf "$dir"
}

case $cmd in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac

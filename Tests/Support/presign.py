#!/usr/bin/env python3
"""Presigned GET URLs made by botocore's own signer, for thumbd's presigned-source tests.

    presign.py --endpoint URL --bucket B --key K [--put FILE] [--expires SECONDS] [--count N]

Creates the bucket if it is missing, uploads FILE at the key when --put is given, then prints N
presigned SigV4 GET URLs of the object, one per line, each with its own X-Amz-Expires (SECONDS,
SECONDS+1, ...) and so its own signature: what a backend gets from signing one object several times.
Runs with the test virtualenv's boto3; the credentials are dummies (the server must not check them).
"""

import argparse

import boto3
from botocore.config import Config


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--put")
    parser.add_argument("--expires", type=int, default=3600)
    parser.add_argument("--count", type=int, default=1)
    args = parser.parse_args()
    s3 = boto3.client(
        "s3", endpoint_url=args.endpoint, region_name="us-east-1", aws_access_key_id="AKIAPRESIGNTEST",
        aws_secret_access_key="presign-test-secret", config=Config(signature_version="s3v4"))
    existing = [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
    if args.bucket not in existing:
        s3.create_bucket(Bucket=args.bucket)
    if args.put:
        with open(args.put, "rb") as f:
            s3.put_object(Bucket=args.bucket, Key=args.key, Body=f.read(), ContentType="image/jpeg")
    for n in range(args.count):
        print(s3.generate_presigned_url(
            "get_object", Params={"Bucket": args.bucket, "Key": args.key}, ExpiresIn=args.expires + n))


if __name__ == "__main__":
    main()

"""Writes through the S3 endpoint into a writable backing directory, driven
by the real boto3 and, where boto3 over plain HTTP does not send a form a
client does (aws-chunked bodies: botocore's own encoder for the unsigned
trailer form, SigV4's chunk signatures for the signed form), by raw HTTP:
PutObject, multipart uploads, DeleteObject(s), checksums and Content-MD5,
x-amz-content-sha256, `Expect: 100-continue`, cut uploads, keys that would
leave the directory, read-only buckets, unknown operations.

boto3 lives in the project's venv (scripts/install-deps.sh): this file runs
itself there when the system python lacks it."""
import base64
import binascii
import hashlib
import hmac
import http.client
import io
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402

try:
    import boto3
    import botocore
    import botocore.config
    from botocore.exceptions import ClientError
except ImportError:
    if os.path.exists(dltest.VENV_PY) and not os.environ.get("DLIOFS_S3_REEXEC") and \
            subprocess.run(
                [dltest.VENV_PY, "-c", "import boto3"], capture_output=True).returncode == 0:
        os.environ["DLIOFS_S3_REEXEC"] = "1"
        os.execv(dltest.VENV_PY, [dltest.VENV_PY] + sys.argv)
    boto3 = None

from test_s3 import start_server, stop_server  # noqa: E402

MiB = 1 << 20


def config(tmp, keys=None):
    os.makedirs(os.path.join(tmp, "out"))
    os.makedirs(os.path.join(tmp, "ro"))
    with open(os.path.join(tmp, "ro", "kept.txt"), "wb") as f:
        f.write(b"read-only bytes")
    text = "seed: 4\n"
    if keys:
        text += "s3: {access_key: %s, secret_key: %s}\n" % keys
    text += ("datasets:\n  - {name: dset, format: npy, files: 3, sample_size: 100}\n"
             "backing:\n  - {path: %s, at: out, writable: true}\n"
             "  - {path: %s, at: ro}\n"
             "  - {at: sinkb, sink: true, max_entries: 20}\n"
             % (os.path.join(tmp, "out"), os.path.join(tmp, "ro")))
    return dltest.write_config(tmp, text)


def client(port, key="anyone", secret="anything"):
    return boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port,
                        aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1",
                        config=botocore.config.Config(s3={"addressing_style": "path"},
                                                      signature_version="s3v4",
                                                      retries={"max_attempts": 1}))


def code_of(e):
    return e.exception.response["Error"]["Code"]


def raw(port, method, path, headers=None, body=b""):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


class Base(unittest.TestCase):
    KEYS = None

    @classmethod
    def setUpClass(cls):
        dltest.require(boto3 is not None, "boto3 not installed in %s" % dltest.VENV_PY)
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-s3w-")
        cls.out = os.path.join(cls.tmp, "out")
        cls.proc, cls.port = start_server(config(cls.tmp, cls.KEYS))
        cls.s3 = client(cls.port, *(cls.KEYS or ()))

    @classmethod
    def tearDownClass(cls):
        rc, err = stop_server(cls.proc)
        subprocess.run(["rm", "-rf", cls.tmp])
        assert rc == 0 and "runtime error" not in err and "Sanitizer" not in err, \
            "dliofs s3 serve exited %d on SIGTERM: %s" % (rc, err)

    def setUp(self):
        # Each test starts from an empty directory.
        for name in os.listdir(self.out):
            subprocess.run(["rm", "-rf", os.path.join(self.out, name)], check=True)

    def leftovers(self):
        """The endpoint's temporary files and uploads left in the directory."""
        found = []
        for d, dirs, files in os.walk(self.out):
            found += [os.path.join(d, f) for f in files if f.startswith(".dliofs")]
        return found


class S3WriteTest(Base):
    def test_put_get_list_on_disk(self):
        objs = {"a/b/c.bin": os.urandom(3000), "top.txt": b"", "sp ace/\u00e9t\u00e9.txt": b"x" * 77,
                "a/b2.bin": os.urandom(10)}
        for k, v in objs.items():
            r = self.s3.put_object(Bucket="out", Key=k, Body=v)
            self.assertEqual(r["ETag"], '"%s"' % hashlib.md5(v).hexdigest())
        for k, v in objs.items():
            self.assertEqual(self.s3.get_object(Bucket="out", Key=k)["Body"].read(), v)
            with open(os.path.join(self.out, k), "rb") as f:
                self.assertEqual(f.read(), v)
            h = self.s3.head_object(Bucket="out", Key=k)
            self.assertEqual(h["ContentLength"], len(v))
            self.assertEqual(h["ETag"], '"%s"' % hashlib.md5(v).hexdigest())
        r = self.s3.get_object(Bucket="out", Key="a/b/c.bin", Range="bytes=100-199")
        self.assertEqual(r["Body"].read(), objs["a/b/c.bin"][100:200])
        with self.assertRaises(ClientError) as e:
            self.s3.get_object(Bucket="out", Key="a/b/c.bin", Range="bytes=5000-")
        self.assertEqual(code_of(e), "InvalidRange")
        # Listing: byte order, delimiter, pages of 1 through a paginator.
        want = sorted(objs, key=lambda k: k.encode())
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket="out", PaginationConfig={"PageSize": 1})
        got = [o["Key"] for p in pages for o in p.get("Contents", [])]
        self.assertEqual(got, want)
        r = self.s3.list_objects_v2(Bucket="out", Delimiter="/")
        self.assertEqual([p["Prefix"] for p in r["CommonPrefixes"]], ["a/", "sp ace/"])
        self.assertEqual([o["Key"] for o in r["Contents"]], ["top.txt"])
        pages = self.s3.get_paginator("list_objects").paginate(
            Bucket="out", Delimiter="/", PaginationConfig={"PageSize": 1})
        got = [(p.get("CommonPrefixes") or p.get("Contents"))[0].get("Prefix") or
               (p.get("Contents") or [{}])[0].get("Key") for p in pages]
        self.assertEqual(got, ["a/", "sp ace/", "top.txt"])
        r = self.s3.list_objects_v2(Bucket="out", MaxKeys=0)
        self.assertFalse(r["IsTruncated"])
        for k in objs:
            self.s3.delete_object(Bucket="out", Key=k)
        self.assertEqual(os.listdir(self.out), [])

    def test_overwrite_and_folders(self):
        self.s3.put_object(Bucket="out", Key="f/x", Body=b"one")
        self.s3.put_object(Bucket="out", Key="f/x", Body=b"second")
        self.assertEqual(self.s3.get_object(Bucket="out", Key="f/x")["Body"].read(), b"second")
        # A folder marker (as s3fs makes): an empty folder listed as "m/".
        self.s3.put_object(Bucket="out", Key="m/", Body=b"")
        self.assertTrue(os.path.isdir(os.path.join(self.out, "m")))
        keys = [o["Key"] for o in self.s3.list_objects_v2(Bucket="out")["Contents"]]
        self.assertEqual(keys, ["f/x", "m/"])
        self.s3.head_object(Bucket="out", Key="m/")
        # An object where a folder is, and a folder where an object is.
        for k in ("f", "f/x/y"):
            with self.assertRaises(ClientError) as e:
                self.s3.put_object(Bucket="out", Key=k, Body=b"no")
            self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 409)
        # The folders a PUT made go with their last object; a marker stays.
        self.s3.put_object(Bucket="out", Key="m/inner", Body=b"i")
        self.s3.delete_objects(Bucket="out", Delete={"Objects": [{"Key": "f/x"},
                                                                 {"Key": "m/inner"}]})
        self.assertEqual(sorted(os.listdir(self.out)), ["m"])
        self.s3.delete_object(Bucket="out", Key="m/")
        self.assertEqual(os.listdir(self.out), [])

    def test_multipart(self):
        parts = [os.urandom(5 * MiB), os.urandom(5 * MiB), b"tail"]
        up = self.s3.create_multipart_upload(Bucket="out", Key="mp/obj.bin")["UploadId"]
        etags = []
        for i, p in enumerate(parts):
            r = self.s3.upload_part(Bucket="out", Key="mp/obj.bin", UploadId=up,
                                    PartNumber=i + 1, Body=p)
            etags.append(r["ETag"])
            self.assertEqual(r["ETag"], '"%s"' % hashlib.md5(p).hexdigest())
        # A part sent again replaces the first.
        r = self.s3.upload_part(Bucket="out", Key="mp/obj.bin", UploadId=up, PartNumber=3,
                                Body=parts[2])
        lp = self.s3.list_parts(Bucket="out", Key="mp/obj.bin", UploadId=up)
        self.assertEqual([(p["PartNumber"], p["Size"]) for p in lp["Parts"]],
                         [(1, 5 * MiB), (2, 5 * MiB), (3, 4)])
        self.assertNotIn("Contents", self.s3.list_objects_v2(Bucket="out"))
        with self.assertRaises(ClientError) as e:
            self.s3.complete_multipart_upload(
                Bucket="out", Key="mp/obj.bin", UploadId=up,
                MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": etags[1]},
                                           {"PartNumber": 1, "ETag": etags[0]}]})
        self.assertEqual(code_of(e), "InvalidPartOrder")
        with self.assertRaises(ClientError) as e:
            self.s3.complete_multipart_upload(
                Bucket="out", Key="mp/obj.bin", UploadId=up,
                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etags[1]}]})
        self.assertEqual(code_of(e), "InvalidPart")
        # An ETag is a part's name: one that is a path goes nowhere.
        with self.assertRaises(ClientError) as e:
            self.s3.complete_multipart_upload(
                Bucket="out", Key="mp/obj.bin", UploadId=up,
                MultipartUpload={"Parts": [{"PartNumber": 1,
                                            "ETag": '"../../../../../../../../../../a/b"'}]})
        self.assertEqual(code_of(e), "InvalidPart")
        r = self.s3.complete_multipart_upload(
            Bucket="out", Key="mp/obj.bin", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": t}
                                       for i, t in enumerate(etags)]})
        md5s = b"".join(hashlib.md5(p).digest() for p in parts)
        self.assertEqual(r["ETag"], '"%s-3"' % hashlib.md5(md5s).hexdigest())
        body = self.s3.get_object(Bucket="out", Key="mp/obj.bin")["Body"].read()
        self.assertEqual(body, b"".join(parts))
        self.assertEqual(self.leftovers(), [])
        with self.assertRaises(ClientError) as e:
            self.s3.upload_part(Bucket="out", Key="mp/obj.bin", UploadId=up, PartNumber=1,
                                Body=b"late")
        self.assertEqual(code_of(e), "NoSuchUpload")
        # Abort: nothing stays.
        up = self.s3.create_multipart_upload(Bucket="out", Key="mp/gone")["UploadId"]
        self.s3.upload_part(Bucket="out", Key="mp/gone", UploadId=up, PartNumber=1, Body=b"z")
        self.s3.abort_multipart_upload(Bucket="out", Key="mp/gone", UploadId=up)
        with self.assertRaises(ClientError) as e:
            self.s3.list_parts(Bucket="out", Key="mp/gone", UploadId=up)
        self.assertEqual(code_of(e), "NoSuchUpload")
        # An upload id is bound to its key.
        up = self.s3.create_multipart_upload(Bucket="out", Key="mp/k1")["UploadId"]
        with self.assertRaises(ClientError) as e:
            self.s3.upload_part(Bucket="out", Key="mp/k2", UploadId=up, PartNumber=1, Body=b"")
        self.assertEqual(code_of(e), "NoSuchUpload")
        self.s3.abort_multipart_upload(Bucket="out", Key="mp/k1", UploadId=up)
        # boto3's transfer manager: 20 MiB in parts, four at a time.
        data = os.urandom(20 * MiB)
        self.s3.upload_fileobj(io.BytesIO(data), "out", "mp/managed.bin",
                               Config=boto3.s3.transfer.TransferConfig(
                                   multipart_threshold=8 * MiB, multipart_chunksize=5 * MiB,
                                   max_concurrency=4))
        got = io.BytesIO()
        self.s3.download_fileobj("out", "mp/managed.bin", got,
                                 Config=boto3.s3.transfer.TransferConfig(
                                     multipart_threshold=4 * MiB, multipart_chunksize=3 * MiB))
        self.assertEqual(got.getvalue(), data)
        self.assertEqual(self.leftovers(), [])
        self.s3.delete_objects(Bucket="out", Delete={"Objects": [{"Key": "mp/obj.bin"},
                                                                 {"Key": "mp/managed.bin"}],
                                                     "Quiet": True})
        self.assertEqual(os.listdir(self.out), [])  # the uploads folder too

    def test_copy(self):
        # From a read-only directory, a dataset (generated bytes), within the
        # bucket, onto itself (s3fs's touch), into a sink; keys percent-encoded.
        r = self.s3.copy_object(Bucket="out", Key="c/kept", CopySource={"Bucket": "ro",
                                                                        "Key": "kept.txt"})
        self.assertEqual(r["CopyObjectResult"]["ETag"],
                         '"%s"' % hashlib.md5(b"read-only bytes").hexdigest())
        self.assertEqual(self.s3.get_object(Bucket="out", Key="c/kept")["Body"].read(),
                         b"read-only bytes")
        key = self.s3.list_objects_v2(Bucket="dset")["Contents"][1]["Key"]
        want = self.s3.get_object(Bucket="dset", Key=key)["Body"].read()
        self.s3.copy_object(Bucket="out", Key="c/d \u00e9.npy", CopySource={"Bucket": "dset",
                                                                           "Key": key})
        with open(os.path.join(self.out, "c", "d \u00e9.npy"), "rb") as f:
            self.assertEqual(f.read(), want)
        self.s3.copy_object(Bucket="out", Key="c/moved", CopySource="out/c/kept")
        self.s3.delete_object(Bucket="out", Key="c/kept")
        r = self.s3.copy_object(Bucket="out", Key="c/moved", CopySource="out/c/moved",
                                MetadataDirective="REPLACE", Metadata={"mode": "33188"})
        self.assertEqual(self.s3.get_object(Bucket="out", Key="c/moved")["Body"].read(),
                         b"read-only bytes")
        self.s3.copy_object(Bucket="sinkb", Key="copied", CopySource="out/c/moved")
        self.assertEqual(self.s3.head_object(Bucket="sinkb", Key="copied")["ContentLength"], 15)
        self.s3.delete_object(Bucket="sinkb", Key="copied")
        for src, code in (({"Bucket": "ro", "Key": "nope"}, "NoSuchKey"),
                          ({"Bucket": "nob", "Key": "x"}, "NoSuchBucket")):
            with self.assertRaises(ClientError) as e:
                self.s3.copy_object(Bucket="out", Key="c/x", CopySource=src)
            self.assertEqual(code_of(e), code)
        with self.assertRaises(ClientError) as e:
            self.s3.copy_object(Bucket="ro", Key="x", CopySource="out/c/moved")
        self.assertEqual(code_of(e), "AccessDenied")
        self.assertEqual(sorted(os.listdir(os.path.join(self.out, "c"))), ["d \u00e9.npy", "moved"])
        self.assertEqual(self.leftovers(), [])

    def test_checksums(self):
        # boto3 computes each and the endpoint checks it.
        for alg in ("CRC32", "SHA1", "SHA256"):
            body = os.urandom(1000)
            r = self.s3.put_object(Bucket="out", Key="ck/" + alg, Body=body,
                                   ChecksumAlgorithm=alg)
            self.assertIn("Checksum" + alg, r)
        # CRC32C and CRC64/NVME (botocore needs awscrt for them): computed here.
        body = os.urandom(1000)
        for name, width, poly in (("crc32c", 32, 0x82F63B78), ("crc64nvme", 64, 0x9A6C9329AC4BC9B5)):
            mask = (1 << width) - 1
            c = mask
            for byte in body:
                c ^= byte
                for _ in range(8):
                    c = (c >> 1) ^ poly if c & 1 else c >> 1
            good = base64.b64encode((c ^ mask).to_bytes(width // 8, "big")).decode()
            bad = base64.b64encode((c ^ mask ^ 4).to_bytes(width // 8, "big")).decode()
            st, resp = raw(self.port, "PUT", "/out/ck/" + name, {"x-amz-checksum-" + name: good},
                           body)
            self.assertEqual(st, 200, resp)
            st, resp = raw(self.port, "PUT", "/out/ck/" + name, {"x-amz-checksum-" + name: bad},
                           body)
            self.assertIn(b"BadDigest", resp)
        # The check value of "123456789" (the CRC catalogue's test): the tables are right.
        st, resp = raw(self.port, "PUT", "/out/ck/cat", {"x-amz-checksum-crc32c": base64.b64encode(
            bytes.fromhex("e3069283")).decode()}, b"123456789")
        self.assertEqual(st, 200, resp)
        body = b"checked bytes"
        good_crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
        bad_crc = base64.b64encode((zlib.crc32(body) ^ 1).to_bytes(4, "big")).decode()
        st, _ = raw(self.port, "PUT", "/out/ck/h", {"x-amz-checksum-crc32": good_crc}, body)
        self.assertEqual(st, 200)
        for hdr, want in (({"x-amz-checksum-crc32": bad_crc}, b"BadDigest"),
                          ({"Content-MD5": base64.b64encode(hashlib.md5(b"x").digest()).decode()},
                           b"BadDigest"),
                          ({"x-amz-content-sha256": hashlib.sha256(b"other").hexdigest()},
                           b"XAmzContentSHA256Mismatch")):
            st, data = raw(self.port, "PUT", "/out/ck/refused", hdr, body)
            self.assertEqual(st, 400, data)
            self.assertIn(b"<Code>" + want + b"</Code>", data)
        self.assertFalse(os.path.exists(os.path.join(self.out, "ck", "refused")))
        self.assertEqual(self.leftovers(), [])

    def chunked_body(self, data, checksum=None):
        """botocore's own aws-chunked encoder (what boto3 sends over HTTPS)."""
        from botocore.httpchecksum import AwsChunkedWrapper, Crc32Checksum
        w = AwsChunkedWrapper(io.BytesIO(data), checksum_cls=Crc32Checksum,
                              checksum_name="x-amz-checksum-crc32", chunk_size=4096)
        return w.read()

    def test_aws_chunked_unsigned_trailer(self):
        data = os.urandom(50000)
        body = self.chunked_body(data)
        self.assertIn(b"x-amz-checksum-crc32:", body)
        hdr = {"Content-Encoding": "aws-chunked", "x-amz-trailer": "x-amz-checksum-crc32",
               "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
               "x-amz-decoded-content-length": str(len(data))}
        st, resp = raw(self.port, "PUT", "/out/chunked.bin", hdr, body)
        self.assertEqual(st, 200, resp)
        self.assertEqual(self.s3.get_object(Bucket="out", Key="chunked.bin")["Body"].read(), data)
        # The same sent in HTTP chunks (Transfer-Encoding: chunked), as boto3 does.
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("PUT", "/out/chunked2.bin", body=iter([body[:1000], body[1000:]]),
                  headers=hdr, encode_chunked=True)
        self.assertEqual(c.getresponse().status, 200)
        c.close()
        self.assertEqual(self.s3.get_object(Bucket="out", Key="chunked2.bin")["Body"].read(),
                         data)
        # A damaged byte, a wrong trailer, a cut body, a wrong length: refused, nothing kept.
        bad = bytearray(body)
        bad[body.index(b"\r\n") + 10] ^= 1
        cases = [(bytes(bad), hdr, b"BadDigest"),
                 (body.replace(b"x-amz-checksum-crc32:", b"x-amz-checksum-crc32:AAAA"), hdr,
                  b"BadDigest"),
                 (body[:len(body) // 2], hdr, b"IncompleteBody"),
                 (body, dict(hdr, **{"x-amz-decoded-content-length": "7"}), b"IncompleteBody"),
                 (b"zz\r\n" + body, hdr, b"IncompleteBody")]
        for b, h, code in cases:
            st, resp = raw(self.port, "PUT", "/out/refused.bin", h, b)
            self.assertEqual(st, 400, resp)
            self.assertIn(b"<Code>" + code + b"</Code>", resp)
        self.assertFalse(os.path.exists(os.path.join(self.out, "refused.bin")))
        self.assertEqual(self.leftovers(), [])

    def test_expect_100_continue(self):
        def send_headers(path, length):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                       "Expect: 100-continue\r\n\r\n" % (path, length)).encode())
            return s
        # Refused from the headers: the error, no 100, no body needed.
        s = send_headers("/ro/new.txt", 1 << 30)
        resp = s.recv(4096)
        self.assertTrue(resp.startswith(b"HTTP/1.1 403"), resp)
        self.assertIn(b"AccessDenied", resp)
        s.close()
        # Accepted: 100 Continue, then the body, then 200.
        s = send_headers("/out/cont.txt", 5)
        self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 100"))
        s.sendall(b"hello")
        self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200"))
        s.close()
        with open(os.path.join(self.out, "cont.txt"), "rb") as f:
            self.assertEqual(f.read(), b"hello")

    def test_cut_upload_leaves_nothing(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(b"PUT /out/cut.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                  b"x" * 5000)
        time.sleep(0.3)
        self.assertNotEqual(self.leftovers(), [])  # the upload is under way
        s.close()
        self.assertTrue(dltest.wait_for(lambda: self.leftovers() == [], timeout=10))
        self.assertFalse(os.path.exists(os.path.join(self.out, "cut.bin")))
        self.assertIn(self.s3.list_objects_v2(Bucket="out")["KeyCount"], (0, 1))

    def test_refused(self):
        outside = os.path.join(self.tmp, "outside")
        os.makedirs(outside, exist_ok=True)
        os.symlink(outside, os.path.join(self.out, "link"))
        try:
            for k in ("../x", "a/../../x", ".dliofs.uploads/x", "a//b", "./x", "link/x"):
                st, resp = raw(self.port, "PUT", "/out/" + k, {}, b"evil")
                self.assertIn(st, (400, 409), (k, resp))
            with self.assertRaises(ClientError) as e:
                self.s3.get_object(Bucket="out", Key="link/x")
            self.assertEqual(code_of(e), "NoSuchKey")
            self.assertEqual(os.listdir(outside), [])
            self.assertNotIn("Contents", self.s3.list_objects_v2(Bucket="out"))
        finally:
            os.unlink(os.path.join(self.out, "link"))
        with self.assertRaises(ClientError) as e:
            self.s3.put_object(Bucket="ro", Key="x", Body=b"no")
        self.assertEqual(code_of(e), "AccessDenied")
        with self.assertRaises(ClientError) as e:
            self.s3.delete_object(Bucket="ro", Key="kept.txt")
        self.assertEqual(code_of(e), "AccessDenied")
        self.assertEqual(self.s3.get_object(Bucket="ro", Key="kept.txt")["Body"].read(),
                         b"read-only bytes")
        with self.assertRaises(ClientError) as e:
            self.s3.put_object(Bucket="dset", Key="train/x", Body=b"no")
        self.assertEqual(code_of(e), "MethodNotAllowed")
        # Operations not implemented: S3's NotImplemented, the service goes on.
        for method, path in (("PUT", "/out/k?tagging"), ("GET", "/out/k?acl"),
                             ("POST", "/out?foo"), ("PUT", "/out"), ("PATCH", "/out/k")):
            st, resp = raw(self.port, method, path, {}, b"")
            self.assertEqual(st, 501, (method, path, resp))
            self.assertIn(b"<Code>NotImplemented</Code>", resp)
        with self.assertRaises(ClientError) as e:
            self.s3.upload_part_copy(Bucket="out", Key="c", UploadId="0" * 32, PartNumber=1,
                                     CopySource={"Bucket": "ro", "Key": "kept.txt"})
        self.assertEqual(code_of(e), "NotImplemented")
        # Malformed XML bodies.
        for path, body in (("/out?delete", b"<Delete><Object><Key>a</Key>"),
                           ("/out?delete", b"<!DOCTYPE x [<!ENTITY e 'a'>]><Delete><Object>"
                                           b"<Key>&e;</Key></Object></Delete>"),
                           ("/out?delete", b"<Other/>")):
            st, resp = raw(self.port, "POST", path, {}, body)
            self.assertEqual(st, 400, resp)
            self.assertIn(b"MalformedXML", resp)


class S3SinkTest(Base):
    """A sink as a bucket: writes checked and counted, bytes dropped; reads
    of an object give its size and deterministic bytes, as the mount's sink."""

    def test_sink(self):
        data = os.urandom(30000)
        r = self.s3.put_object(Bucket="sinkb", Key="ck/a.bin", Body=data, ChecksumAlgorithm="CRC32")
        self.assertEqual(r["ETag"], '"%s"' % hashlib.md5(data).hexdigest())
        h = self.s3.head_object(Bucket="sinkb", Key="ck/a.bin")
        self.assertEqual((h["ContentLength"], h["ETag"]), (len(data), r["ETag"]))
        got = self.s3.get_object(Bucket="sinkb", Key="ck/a.bin")["Body"].read()
        self.assertEqual(len(got), len(data))
        self.assertNotEqual(got, data)  # not kept: generated
        self.assertEqual(got, self.s3.get_object(Bucket="sinkb", Key="ck/a.bin")["Body"].read())
        rng = self.s3.get_object(Bucket="sinkb", Key="ck/a.bin", Range="bytes=1000-1999")
        self.assertEqual(rng["Body"].read(), got[1000:2000])
        # Another key, other bytes; a checksum that does not match is still refused.
        self.s3.put_object(Bucket="sinkb", Key="ck/b.bin", Body=data)
        self.assertNotEqual(self.s3.get_object(Bucket="sinkb", Key="ck/b.bin")["Body"].read(), got)
        st, resp = raw(self.port, "PUT", "/sinkb/ck/bad", {"Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="},
                       b"x")
        self.assertIn(b"BadDigest", resp)
        # Multipart: the parts' sizes add up, S3's ETag.
        parts = [os.urandom(5 * MiB), b"end"]
        up = self.s3.create_multipart_upload(Bucket="sinkb", Key="ck/mp")["UploadId"]
        tags = [self.s3.upload_part(Bucket="sinkb", Key="ck/mp", UploadId=up, PartNumber=i + 1,
                                    Body=p)["ETag"] for i, p in enumerate(parts)]
        with self.assertRaises(ClientError) as e:
            self.s3.complete_multipart_upload(Bucket="sinkb", Key="ck/mp", UploadId=up,
                                              MultipartUpload={"Parts": [
                                                  {"PartNumber": 1, "ETag": tags[1]}]})
        self.assertEqual(code_of(e), "InvalidPart")
        r = self.s3.complete_multipart_upload(
            Bucket="sinkb", Key="ck/mp", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": t} for i, t in enumerate(tags)]})
        md5s = b"".join(hashlib.md5(p).digest() for p in parts)
        self.assertEqual(r["ETag"], '"%s-2"' % hashlib.md5(md5s).hexdigest())
        self.assertEqual(self.s3.head_object(Bucket="sinkb", Key="ck/mp")["ContentLength"],
                         5 * MiB + 3)
        up = self.s3.create_multipart_upload(Bucket="sinkb", Key="ck/gone")["UploadId"]
        self.s3.abort_multipart_upload(Bucket="sinkb", Key="ck/gone", UploadId=up)
        with self.assertRaises(ClientError) as e:
            self.s3.upload_part(Bucket="sinkb", Key="ck/gone", UploadId=up, PartNumber=1, Body=b"")
        self.assertEqual(code_of(e), "NoSuchUpload")
        r = self.s3.list_objects_v2(Bucket="sinkb", Delimiter="/")
        self.assertEqual([p["Prefix"] for p in r["CommonPrefixes"]], ["ck/"])
        r = self.s3.list_objects_v2(Bucket="sinkb", Prefix="ck/", MaxKeys=2)
        self.assertEqual([o["Key"] for o in r["Contents"]], ["ck/a.bin", "ck/b.bin"])
        r = self.s3.list_objects_v2(Bucket="sinkb", Prefix="ck/", MaxKeys=2,
                                    ContinuationToken=r["NextContinuationToken"])
        self.assertEqual([(o["Key"], o["Size"]) for o in r["Contents"]], [("ck/mp", 5 * MiB + 3)])
        # At most max_entries objects (20): then InsufficientStorage; a delete makes room.
        for i in range(17):
            self.s3.put_object(Bucket="sinkb", Key="fill/%02d" % i, Body=b"")
        with self.assertRaises(ClientError) as e:
            self.s3.put_object(Bucket="sinkb", Key="fill/over", Body=b"")
        self.assertEqual(code_of(e), "InsufficientStorage")
        self.s3.delete_objects(Bucket="sinkb", Delete={"Objects": [{"Key": "ck/a.bin"}]})
        self.s3.put_object(Bucket="sinkb", Key="fill/over", Body=b"")
        with self.assertRaises(ClientError) as e:
            self.s3.head_object(Bucket="sinkb", Key="ck/a.bin")
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 404)


def sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class S3WriteAuthTest(Base):
    """With keys: boto3's signed writes pass, others are refused; SigV4's
    signed aws-chunked bodies have each chunk's signature checked."""
    KEYS = ("AKIDW", "wr1te-secret")

    def test_boto3_signed_writes(self):
        self.s3.put_object(Bucket="out", Key="s/a", Body=b"signed")
        self.s3.upload_fileobj(io.BytesIO(os.urandom(12 * MiB)), "out", "s/mp",
                               Config=boto3.s3.transfer.TransferConfig(
                                   multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB))
        self.assertEqual(self.s3.head_object(Bucket="out", Key="s/mp")["ContentLength"],
                         12 * MiB)
        self.s3.delete_objects(Bucket="out", Delete={"Objects": [{"Key": "s/a"}, {"Key": "s/mp"}]})
        bad = client(self.port, "AKIDW", "wrong")
        with self.assertRaises(ClientError) as e:
            bad.put_object(Bucket="out", Key="s/b", Body=b"x")
        self.assertEqual(code_of(e), "SignatureDoesNotMatch")
        st, resp = raw(self.port, "PUT", "/out/s/c", {}, b"unsigned")
        self.assertEqual(st, 403)
        self.assertEqual(os.listdir(self.out), [])

    def test_signed_without_payload_header(self):
        # Signed without x-amz-content-sha256: the signature covers an empty
        # body (SigV4's default), so another body is refused.
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        req = AWSRequest(method="PUT", url="http://127.0.0.1:%d/out/nohdr" % self.port, data=b"")
        SigV4Auth(Credentials(*self.KEYS), "s3", "us-east-1").add_auth(req)
        hdr = dict(req.headers.items())
        self.assertNotIn("x-amz-content-sha256", {k.lower() for k in hdr})
        st, resp = raw(self.port, "PUT", "/out/nohdr", hdr, b"replayed with a body")
        self.assertEqual(st, 400, resp)
        self.assertIn(b"XAmzContentSHA256Mismatch", resp)
        self.assertFalse(os.path.exists(os.path.join(self.out, "nohdr")))
        st, resp = raw(self.port, "PUT", "/out/nohdr", hdr, b"")
        self.assertEqual(st, 200, resp)
        self.assertEqual(os.path.getsize(os.path.join(self.out, "nohdr")), 0)

    def streaming(self, path, data, chunk=8192, tamper=None, trailer=False):
        """A SigV4 request with a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else "")
        url = "http://127.0.0.1:%d%s" % (self.port, path)
        hdr = {"x-amz-content-sha256": mode, "Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(len(data))}
        if trailer:
            hdr["x-amz-trailer"] = "x-amz-checksum-crc32"
        class Streaming(S3SigV4Auth):
            def payload(self, request):
                return mode  # botocore would hash the (empty) body over HTTP
        req = AWSRequest(method="PUT", url=url, headers=hdr)
        Streaming(Credentials(*self.KEYS), "s3", "us-east-1").add_auth(req)
        auth = req.headers["Authorization"]
        seed = auth.split("Signature=")[1]
        scope = auth.split("Credential=")[1].split(",")[0].split("/", 1)[1]
        date = req.headers["X-Amz-Date"]
        k = sign(("AWS4" + self.KEYS[1]).encode(), scope.split("/")[0])
        for part in scope.split("/")[1:]:
            k = sign(k, part)
        empty = hashlib.sha256(b"").hexdigest()
        prev, body = seed, b""
        pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
        for n, p in enumerate(pieces):
            sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", date, scope, prev, empty,
                             hashlib.sha256(p).hexdigest()])
            prev = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
            if tamper == n:
                p = bytes([p[0] ^ 1]) + p[1:]
            body += b"%x;chunk-signature=%s\r\n" % (len(p), prev.encode()) + p
            body += b"\r\n" if p else b""
        if trailer:
            crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
            lines = "x-amz-checksum-crc32:%s\n" % crc
            sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", date, scope, prev,
                             hashlib.sha256(lines.encode()).hexdigest()])
            tsig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
            if tamper == "trailer":
                tsig = tsig[::-1]
            body += ("x-amz-checksum-crc32:%s\r\nx-amz-trailer-signature:%s\r\n" %
                     (crc, tsig)).encode()
        body += b"\r\n"
        return raw(self.port, "PUT", path, dict(req.headers.items()), body)

    def test_signed_chunks(self):
        data = os.urandom(30000)
        st, resp = self.streaming("/out/sc.bin", data)
        self.assertEqual(st, 200, resp)
        self.assertEqual(self.s3.get_object(Bucket="out", Key="sc.bin")["Body"].read(), data)
        st, resp = self.streaming("/out/sct.bin", data, trailer=True)
        self.assertEqual(st, 200, resp)
        self.assertEqual(self.s3.get_object(Bucket="out", Key="sct.bin")["Body"].read(), data)
        for tamper, trailer in ((0, False), (2, False), (3, False), ("trailer", True)):
            st, resp = self.streaming("/out/bad.bin", data, tamper=tamper, trailer=trailer)
            self.assertEqual(st, 403, (tamper, resp))
            self.assertIn(b"SignatureDoesNotMatch", resp)
        self.assertFalse(os.path.exists(os.path.join(self.out, "bad.bin")))
        self.assertEqual(self.leftovers(), [])


if __name__ == "__main__":
    unittest.main()

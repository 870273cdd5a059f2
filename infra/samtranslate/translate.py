"""template.yaml as CloudFormation receives it: SAM's own translator
(aws-sam-translator), run offline.

    python3 infra/samtranslate/translate.py template.yaml [Name=Value ...]
        prints the translation with those parameter values (the others take
        their defaults, as in CloudFormation's transform)
    python3 infra/samtranslate/translate.py --sets template.yaml < sets.json
        sets.json is a JSON list of {"Name": "Value"} objects; prints a JSON
        list of their translations, in one process (functions/translated_test.go)
    python3 infra/samtranslate/translate.py --create-only Type ...
        prints, for each resource type, the properties CloudFormation cannot
        change in place (it replaces the resource), from the resource schemas
        cfn-lint carries

Offline means three stand-ins for what `sam deploy` and CloudFormation supply:
each function's local CodeUri becomes an S3 location, as `sam package` would
write it; the region is fixed (no AWS profile is read); and the managed-policy
map is empty, since the template names no managed policy by its short name.
"""

import json
import logging
import sys

import boto3
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse

REGION = "us-east-1"
ARTIFACTS = "s3://erp-gateway-artifacts/"


def translate(path, parameters):
    with open(path, encoding="utf-8") as f:
        template = yaml_parse(f.read())
    for name in parameters:
        if name not in template.get("Parameters", {}):
            sys.exit(f"translate.py: {name!r} is not a parameter of {path}")
    for name, resource in template["Resources"].items():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = ARTIFACTS + name
    return Translator(
        managed_policy_map={},
        sam_parser=Parser(),
        boto_session=boto3.session.Session(region_name=REGION),
    ).translate(sam_template=template, parameter_values=dict(parameters))


def create_only(types):
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER  # noqa: PLC0415

    out = {}
    for t in types:
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(REGION, t).schema
        out[t] = [p.removeprefix("/properties/") for p in schema.get("createOnlyProperties", [])]
    return out


def main(argv):
    # SAM warns of feature toggles it has no configuration for: there is none
    # offline, and its defaults are what CloudFormation's transform uses.
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    if len(argv) >= 2 and argv[1] == "--create-only":
        out = create_only(argv[2:])
    elif len(argv) == 3 and argv[1] == "--sets":
        out = [translate(argv[2], s) for s in json.load(sys.stdin)]
    elif len(argv) >= 2 and not argv[1].startswith("-"):
        parameters = {}
        for arg in argv[2:]:
            name, sep, value = arg.partition("=")
            if not sep:
                sys.exit(f"translate.py: {arg!r} is not Name=Value")
            parameters[name] = value
        out = translate(argv[1], parameters)
    else:
        sys.exit(__doc__)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)

"""The procurement analyst's policy pack: `pulumi preview --policy-pack policies/pack`."""

from analyst_guard import ENFORCEMENT, policies
from pulumi_policy import PolicyPack

PolicyPack(name="procurement-analyst", enforcement_level=ENFORCEMENT, policies=policies())
